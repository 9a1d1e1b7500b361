"""The tools, tested without wasm: `python3 -m unittest`."""

import json
import unittest

from corral_kit import Crash, TestHost, call, schema_of
from tools import TOOLS, greet, tally


class ToolsTest(unittest.TestCase):
    def test_greets_by_name(self):
        out = call(TOOLS, TestHost(), greet.name, json.dumps({"name": "Ada"}))
        self.assertEqual((out.text, out.is_error), ("Hello, Ada!", False))

    def test_an_empty_name_is_an_error_the_model_can_read(self):
        out = call(TOOLS, TestHost(), greet.name, json.dumps({"name": " "}))
        self.assertTrue(out.is_error)
        self.assertIn("say who to greet", out.text)

    def test_arguments_are_typed_and_a_wrong_one_names_the_field(self):
        def error(args):
            return call(TOOLS, TestHost(), tally.name, json.dumps(args)).text

        self.assertEqual(error({"to": "ten"}), 'argument `to` must be an integer, got "ten"')
        self.assertEqual(error({"to": True}), "argument `to` must be an integer, got true")
        self.assertEqual(error({"to": 5, "every": 0}), "argument `every` must be at least 1, got 0")
        self.assertIn("argument `to` is missing", error({}))
        self.assertIn("unknown argument `evry`", error({"to": 5, "evry": 2}))
        self.assertEqual(schema_of(tally.args)["required"], ["to"], "an argument with a default is optional")

    def test_the_tally_reports_progress_and_checkpoints_as_it_goes(self):
        host = TestHost()
        out = call(TOOLS, host, tally.name, json.dumps({"to": 10, "every": 4}))
        self.assertEqual(out.structured, {"sum": 55, "resumedAt": 1})
        self.assertEqual([done for done, _, _ in host.reports], [4, 8, 10])
        self.assertEqual(len(host.checkpoints), 3)

    def test_after_a_crash_the_tally_resumes_from_its_last_checkpoint(self):
        host = TestHost(crash_after=2)
        with self.assertRaises(Crash):
            call(TOOLS, host, tally.name, json.dumps({"to": 10, "every": 4}))
        out = call(TOOLS, host, tally.name, json.dumps({"to": 10, "every": 4}))
        self.assertEqual(out.structured, {"sum": 55, "resumedAt": 9}, "the second run starts after 8")
        self.assertEqual(out.text, "1 + 2 + ... + 10 = 55 (resumed at 9)")


if __name__ == "__main__":
    unittest.main()
