//===- gridexpr.cpp - the manifest's launch-grid expressions --------------===//
//
// A manifest states each kernel's grid as three small integer expressions over
// the call's sizes (`num_kv_heads*ceil(group_size/heads_per_program)`), so the
// compiler, not the runtime, owns the kernel's geometry. They are parsed once
// at load into postfix form and evaluated per call without allocating.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <unordered_map>

#include <cctype>
#include <cstring>

namespace pa {

int gridSymOf(const std::string &name);

const char *gridSymName(GridSym sym) {
  switch (sym) {
  case GridSym::NumSeqs:
    return "num_seqs";
  case GridSym::NumHeads:
    return "num_heads";
  case GridSym::NumKvHeads:
    return "num_kv_heads";
  case GridSym::GroupSize:
    return "group_size";
  case GridSym::HeadsPerProgram:
    return "heads_per_program";
  case GridSym::NumPartitions:
    return "num_partitions";
  case GridSym::MaxNumPartitions:
    return "max_num_partitions";
  case GridSym::PartitionTokens:
    return "partition_tokens";
  case GridSym::HeadSize:
    return "head_size";
  case GridSym::BlockSize:
    return "block_size";
  case GridSym::Warps:
    return "warps";
  case GridSym::TokenStep:
    return "token_step";
  case GridSym::MaxBlocksPerSeq:
    return "max_blocks_per_seq";
  case GridSym::QuerySlots:
    return "query_slots";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Parsing: recursive descent, emitting postfix
//===----------------------------------------------------------------------===//

namespace {

/// Deep enough for any real grid; bounds the evaluation stack.
constexpr size_t kMaxNodes = 64;

class GridExprParser {
public:
  GridExprParser(const std::string &text, GridExpr &out, std::string &error)
      : text(text), out(out), error(error) {}

  bool parse() {
    if (text.empty())
      return fail("empty expression");
    if (!parseSum())
      return false;
    if (pos != text.size())
      return fail("unexpected '" + text.substr(pos, 1) + "' at column " +
                  std::to_string(pos + 1));
    if (out.nodes.size() > kMaxNodes)
      return fail("expression too long");
    return true;
  }

private:
  bool fail(const std::string &why) {
    error = why;
    return false;
  }
  bool peek(char c) const { return pos < text.size() && text[pos] == c; }
  void emit(GridExpr::Op op, int64_t value = 0) {
    out.nodes.push_back({op, value});
  }

  bool parseSum() {
    if (!parseProduct())
      return false;
    while (peek('+') || peek('-')) {
      char op = text[pos++];
      if (!parseProduct())
        return false;
      emit(op == '+' ? GridExpr::Op::Add : GridExpr::Op::Sub);
    }
    return true;
  }

  bool parseProduct() {
    if (!parseAtom())
      return false;
    while (peek('*') || peek('/')) {
      char op = text[pos++];
      if (!parseAtom())
        return false;
      emit(op == '*' ? GridExpr::Op::Mul : GridExpr::Op::Div);
    }
    return true;
  }

  bool parseAtom() {
    if (pos >= text.size())
      return fail("expression ends early");
    char c = text[pos];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t value = 0;
      while (pos < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[pos]))) {
        value = value * 10 + (text[pos++] - '0');
        if (value > INT32_MAX)
          return fail("number too large");
      }
      emit(GridExpr::Op::Const, value);
      return true;
    }
    if (c == '(') {
      ++pos;
      if (!parseSum())
        return false;
      if (!peek(')'))
        return fail("missing ')'");
      ++pos;
      return true;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_')
      return fail("unexpected '" + std::string(1, c) + "' at column " +
                  std::to_string(pos + 1));
    size_t start = pos;
    while (pos < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[pos])) ||
            text[pos] == '_'))
      ++pos;
    std::string name = text.substr(start, pos - start);
    if (name == "ceil") {
      if (!expect('(', "ceil must be followed by '('") || !parseSum() ||
          !expect(')', "missing ')' after ceil("))
        return false;
      if (out.nodes.empty() || out.nodes.back().op != GridExpr::Op::Div)
        return fail("ceil() takes a division a/b");
      out.nodes.back().op = GridExpr::Op::CeilDiv;
      return true;
    }
    if (name == "max")
      return parseMax();
    int sym = gridSymOf(name);
    if (sym >= 0) {
      emit(GridExpr::Op::Sym, sym);
      return true;
    }
    std::string known;
    for (int i = 0; i < kNumGridSyms; ++i)
      known += std::string(i ? ", " : "") + gridSymName(GridSym(i));
    return fail("unknown name '" + name + "' (known: " + known + ")");
  }

  /// max(a,b), after the name.
  bool parseMax() {
    if (!expect('(', "max must be followed by '('") || !parseSum() ||
        !expect(',', "max() takes two expressions: max(a,b)") ||
        !parseSum() || !expect(')', "missing ')' after max("))
      return false;
    emit(GridExpr::Op::Max);
    return true;
  }

  /// Consumes `c`, or fails with `why`.
  bool expect(char c, const char *why) {
    if (!peek(c))
      return fail(why);
    ++pos;
    return true;
  }

  const std::string &text;
  GridExpr &out;
  std::string &error;
  size_t pos = 0;
};

} // namespace

/// The GridSym named `name`, or -1 (a hash lookup: every manifest of a
/// library has three grid lines).
int gridSymOf(const std::string &name) {
  static const std::unordered_map<std::string, int> syms = [] {
    std::unordered_map<std::string, int> m;
    for (int i = 0; i < kNumGridSyms; ++i)
      m.emplace(gridSymName(GridSym(i)), i);
    return m;
  }();
  auto it = syms.find(name);
  return it == syms.end() ? -1 : it->second;
}

bool parseGridExpr(const std::string &text, GridExpr &out, std::string &error) {
  out = GridExpr();
  out.text = text;
  return GridExprParser(text, out, error).parse();
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

bool evalGridExpr(const GridExpr &expr, const GridEnv &env, int64_t &out) {
  int64_t stack[kMaxNodes];
  size_t depth = 0;
  for (const GridExpr::Node &node : expr.nodes) {
    if (node.op == GridExpr::Op::Const || node.op == GridExpr::Op::Sym) {
      if (depth == kMaxNodes)
        return false;
      stack[depth++] =
          node.op == GridExpr::Op::Const ? node.value : env.values[node.value];
      continue;
    }
    if (depth < 2)
      return false;
    int64_t b = stack[--depth];
    int64_t a = stack[depth - 1];
    int64_t r = 0;
    switch (node.op) {
    case GridExpr::Op::Add:
      if (__builtin_add_overflow(a, b, &r))
        return false;
      break;
    case GridExpr::Op::Sub:
      if (__builtin_sub_overflow(a, b, &r))
        return false;
      break;
    case GridExpr::Op::Mul:
      if (__builtin_mul_overflow(a, b, &r))
        return false;
      break;
    case GridExpr::Op::Div:
      if (b == 0)
        return false;
      r = a / b;
      break;
    case GridExpr::Op::CeilDiv:
      if (b <= 0 || a < 0)
        return false;
      r = a / b + (a % b != 0);
      break;
    case GridExpr::Op::Max:
      r = a > b ? a : b;
      break;
    default:
      return false;
    }
    stack[depth - 1] = r;
  }
  if (depth != 1)
    return false;
  out = stack[0];
  return true;
}

} // namespace pa
