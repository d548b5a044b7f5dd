// test_lib, part 2 of 3: the unit tests of lib/, lib/sys/ and dataset/, compiled as one
// translation unit (docs/testing.md, "Unit tests"); tests/check-unity holds each test
// file to one part.

#include "tests/unit/dataset/test_source_probe.cpp"
#include "tests/unit/lib/sys/test_dataset_entry.cpp"
#include "tests/unit/lib/sys/test_dataset_walk.cpp"
#include "tests/unit/lib/sys/test_sys.cpp"
#include "tests/unit/lib/sys/test_tree_remover.cpp"
#include "tests/unit/lib/test_deadline.cpp"
#include "tests/unit/lib/test_log.cpp"
#include "tests/unit/lib/test_number.cpp"
#include "tests/unit/lib/test_size.cpp"
#include "tests/unit/lib/test_strings.cpp"
