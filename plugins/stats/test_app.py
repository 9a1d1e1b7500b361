"""The plugin's logic, tested on the host: `python3 -m unittest` in this directory."""

import unittest

from app import describe


class DescribeTest(unittest.TestCase):
    def test_summary(self):
        s = describe([2, 4, 4, 4, 5, 5, 7, 9])
        self.assertEqual((s["count"], s["mean"], s["median"], s["min"], s["max"]), (8, 5.0, 4.5, 2, 9))
        self.assertAlmostEqual(s["stdev"], 2.138, places=3)

    def test_one_number_has_no_spread(self):
        self.assertEqual(describe([3.5])["stdev"], 0.0)

    def test_empty_is_an_error_the_model_can_read(self):
        with self.assertRaisesRegex(ValueError, "at least one number"):
            describe([])


if __name__ == "__main__":
    unittest.main()
