"""The tool's logic, tested without wasm: `python3 -m unittest`."""

import unittest

from app import greet


class GreetTest(unittest.TestCase):
    def test_greets_by_name(self):
        self.assertEqual(greet("Ada"), "Hello, Ada!")

    def test_an_empty_name_is_an_error_the_model_can_read(self):
        with self.assertRaisesRegex(ValueError, "say who to greet"):
            greet(" ")


if __name__ == "__main__":
    unittest.main()
