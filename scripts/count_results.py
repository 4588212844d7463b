#!/usr/bin/env python3
"""Prints 'N passed, N failed, N skipped' from one or more xunit XML files.

A testcase with <failure> or <error> failed, one with <skipped> (lit's
UNSUPPORTED) was skipped, any other passed. Exits non-zero if no file has a
test, so that a suite that ran nothing cannot look green.
"""
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
for path in sys.argv[1:]:
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(0 if passed + failed + skipped else 1)
