"""Unit tests of `runner` with the host's CPython (no component needed):
`python3 -m unittest discover -s tools/run_python`."""

import json
import unittest

import runner


def run(code, stdin=""):
    out = runner.execute(code, stdin)
    # Every result must be valid JSON text and match the declared shape.
    text = runner.dumps_output(out)
    text.encode("utf-8")
    assert set(json.loads(text)) <= set(runner.OUTPUT_SCHEMA["properties"])
    return out


class Outputs(unittest.TestCase):
    def check(self, code, expect, stdin=""):
        out = run(code, stdin)
        for key, value in expect.items():
            self.assertEqual(out.get(key), value, f"{key} of {code!r}: {out}")
        for key in ("result_repr", "error"):
            if key not in expect:
                self.assertNotIn(key, out, code)

    def test_print_goes_to_stdout(self):
        self.check("print(1+1)", {"stdout": "2\n", "stderr": "", "result": None})

    def test_last_expression_is_the_result(self):
        self.check("1+1", {"result": 2, "stdout": ""})
        self.check("x = {'a': [1, 2.5, None, True]}\nx", {"result": {"a": [1, 2.5, None, True]}})
        self.check("x = 3", {"result": None})
        self.check("None", {"result": None})
        self.check("(1, 'b')", {"result": [1, "b"]})

    def test_values_without_json_form_get_a_repr(self):
        self.check("{1, 2}", {"result": None, "result_repr": "{1, 2}"})
        self.check("float('nan')", {"result": None, "result_repr": "nan"})
        self.check("{1: 'a'}", {"result": {"1": "a"}, "result_repr": "{1: 'a'}"})
        self.check("x = []\nx.append(x)\nx", {"result": None, "result_repr": "[[...]]"})
        out = run("class A:\n    def __repr__(self):\n        raise ValueError\nA()")
        self.assertTrue(out["result_repr"].startswith("<A instance at "), out)
        # Deep nesting is cut, not recursed into (a C recursion could
        # overflow the wasm stack).
        out = run("x = []\nfor _ in range(100000):\n    x = [x]\nx")
        self.assertEqual(out["result_repr"], "[" * 21 + "..." + "]" * 21)

    def test_stderr_and_stdin(self):
        self.check("import sys\nprint('e', file=sys.stderr)", {"stderr": "e\n", "stdout": ""})
        self.check("a = input()\nb = input()\na + '+' + b", {"result": "x+y"}, stdin="x\ny\n")
        self.check("import sys\nsys.stdin.read()", {"result": "all\n"}, stdin="all\n")

    def test_streams_are_capped(self):
        out = run("print('x' * 300000)")
        self.assertEqual(len(out["stdout"].split("\n")[0]), runner.MAX_STREAM_BYTES)
        self.assertTrue(out["stdout"].endswith(f"[… {300001 - runner.MAX_STREAM_BYTES} bytes cut]"))

    def test_large_results_become_a_truncated_repr(self):
        out = run("list(range(200000))")
        self.assertIsNone(out["result"])
        self.assertIn("bytes cut]", out["result_repr"])

    def test_exceptions_are_results_with_a_traceback(self):
        out = run("def f(n):\n    return 1/n\nprint('before')\nf(0)")
        self.assertEqual(out["stdout"], "before\n")
        self.assertEqual(out["error"]["name"], "ZeroDivisionError")
        self.assertEqual(out["error"]["message"], "division by zero")
        self.assertEqual(
            out["error"]["stack"],
            'Traceback (most recent call last):\n'
            '  File "<code>", line 4, in <module>\n'
            '    f(0)\n'
            '  File "<code>", line 2, in f\n'
            '    return 1/n\n'
            '           ^^^\n'
            'ZeroDivisionError: division by zero',
        )

    def test_syntax_errors_point_at_the_code(self):
        out = run("x = 1\ndef f(:")
        self.assertEqual(out["error"]["name"], "SyntaxError")
        self.assertTrue(out["error"]["stack"].startswith('  File "<code>", line 2\n    def f(:\n'))

    def test_recursion_error_is_a_result(self):
        out = run("def f():\n    f()\nf()")
        self.assertEqual(out["error"]["name"], "RecursionError")
        self.assertIn("[Previous frames repeated or omitted:", out["error"]["stack"])

    def test_chained_exceptions(self):
        out = run("try:\n    1/0\nexcept Exception as e:\n    raise ValueError('bad') from e")
        self.assertIn("direct cause", out["error"]["stack"])
        self.assertTrue(out["error"]["stack"].endswith("ValueError: bad"))

    def test_exit(self):
        self.check("print('a')\nexit()\nprint('b')", {"stdout": "a\n", "result": None})
        out = run("import sys\nsys.exit(3)")
        self.assertEqual(out["error"]["name"], "SystemExit")
        self.assertEqual(out["error"]["message"], "3")

    def test_lone_surrogates_become_replacement_characters(self):
        out = json.loads(runner.dumps_output(run("x = '\\ud800'\nprint(x)\nx")))
        self.assertEqual(out["stdout"], "\ufffd\n")
        self.assertEqual(out["result"], "\ufffd")

    def test_no_state_leaks_into_sys(self):
        import sys

        before = sys.stdout, sys.stderr, sys.stdin
        run("import sys\nsys.stdout = None\nraise KeyError('k')")
        self.assertEqual((sys.stdout, sys.stderr, sys.stdin), before)


class Namespaces(unittest.TestCase):
    def test_a_shared_namespace_keeps_variables(self):
        namespace = runner.new_namespace()
        runner.execute("x = 41\ndef f(): return x + 1", "", namespace)
        self.assertEqual(runner.execute("f()", "", namespace)["result"], 42)

    def test_a_fresh_namespace_has_nothing(self):
        runner.execute("y = 1", "", runner.new_namespace())
        self.assertEqual(runner.execute("y")["error"]["name"], "NameError")


class Arguments(unittest.TestCase):
    def test_accepts_code_and_optional_stdin(self):
        self.assertEqual(runner.check_arguments({"code": "1"}), ("1", ""))
        self.assertEqual(runner.check_arguments({"code": "1", "stdin": "x"}), ("1", "x"))
        # `null` leaves an optional argument out.
        self.assertEqual(runner.check_arguments({"code": "1", "stdin": None, "session_id": None}), ("1", ""))

    def test_rejects_bad_arguments(self):
        for args, code in [
            ([], "invalid_arguments"),
            ({}, "invalid_arguments"),
            ({"code": 1}, "invalid_arguments"),
            ({"code": "1", "other": 2}, "invalid_arguments"),
            ({"code": "x" * (runner.MAX_CODE_BYTES + 1)}, "code_too_large"),
            ({"code": "", "stdin": "x" * (runner.MAX_STDIN_BYTES + 1)}, "stdin_too_large"),
            # The host consumes `session_id` when it keeps sessions for the
            # tool (and renames the deprecated `session` to it first).
            ({"code": "1", "session_id": "s1"}, "sessions_disabled"),
            ({"code": "1", "session": "s1"}, "invalid_arguments"),
        ]:
            with self.assertRaises(runner.ArgumentError) as ctx:
                runner.check_arguments(args)
            self.assertEqual(ctx.exception.code, code)

    def test_schemas_are_json(self):
        json.loads(json.dumps(runner.PARAMETERS_SCHEMA))
        json.loads(json.dumps(runner.OUTPUT_SCHEMA))

    def test_optional_members_accept_null_and_carry_no_default(self):
        # The rule every bundled tool follows (book/src/tools/writing.md).
        schema = runner.PARAMETERS_SCHEMA
        for name, member in schema["properties"].items():
            self.assertNotIn("default", member, name)
            if name not in schema["required"]:
                self.assertEqual(member["type"][-1], "null", name)
        self.assertEqual(sorted(schema["properties"]), ["code", "session_id", "stdin"])


if __name__ == "__main__":
    unittest.main()


# A 2 × 1 PNG made with the offered modules only, as a model's code would.
PNG_CODE = """
import struct, zlib
def chunk(kind, data):
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
rows = b'\\x00' + b'\\xff\\x00\\x00' + b'\\x00\\x00\\xff'
png = (b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 2, 1, 8, 2, 0, 0, 0))
       + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))
show(png, 'image/png')
len(png)
"""


class Show(unittest.TestCase):
    """`show` hands bytes to the host (here: to runner.SHOWN)."""

    def setUp(self):
        runner.SHOWN.clear()

    def test_a_png_the_code_made_is_shown_as_an_image(self):
        out = run(PNG_CODE)
        self.assertNotIn("error", out, out)
        [(kind, mime_type, data, uri)] = runner.SHOWN
        self.assertEqual((kind, mime_type, uri), ("image", "image/png", "airlock:run_python/shown-1"))
        self.assertTrue(data.startswith(b"\x89PNG"))
        self.assertEqual(len(data), out["result"])

    def test_sounds_files_and_text_files(self):
        out = run("show(bytearray(b'RIFF'), 'audio/wav')\nshow('<svg/>', 'Image/SVG+XML')\nshow(b'%PDF', 'application/pdf')")
        self.assertNotIn("error", out, out)
        self.assertEqual(
            [(k, m, d) for k, m, d, _ in runner.SHOWN],
            [("audio", "audio/wav", b"RIFF"), ("file", "image/svg+xml", "<svg/>"), ("file", "application/pdf", b"%PDF")],
        )

    def test_wrong_arguments_are_exceptions_the_code_sees(self):
        for code, name, needle in [
            ("show('text', 'image/png')", "TypeError", "must be bytes, not str"),
            ("show(b'x', 7)", "TypeError", "mime_type must be a media type"),
            ("show(b'x', '')", "TypeError", "mime_type must be a media type"),
            ("for _ in range(17): show(b'x', 'application/octet-stream')", "RuntimeError", "at most 16 blocks"),
        ]:
            out = run(code)
            self.assertEqual(out["error"]["name"], name, code)
            self.assertIn(needle, out["error"]["message"], code)
        self.assertEqual(len(runner.SHOWN), 16, "the 16 blocks before the cap were shown")

    def test_each_call_has_its_own_count_even_in_one_namespace(self):
        namespace = runner.new_namespace()
        for _ in range(2):
            out = runner.execute("for _ in range(16): show(b'x', 'application/octet-stream')", "", namespace)
            self.assertNotIn("error", out, out)
        self.assertEqual(len(runner.SHOWN), 32)

    def test_a_refusal_by_the_host_is_a_value_error(self):
        def refuse(kind, mime_type, data, uri):
            raise ValueError(f"the host refused the {mime_type} block: too large")

        runner.ATTACH = refuse
        try:
            out = run("show(b'x' * 10, 'image/png')")
        finally:
            runner.ATTACH = None
        self.assertEqual(out["error"]["name"], "ValueError")
        self.assertIn("too large", out["error"]["message"])

    def test_the_description_says_how_to_show(self):
        self.assertIn("show(data, mime_type)", runner.SHOW_DESCRIPTION)
        self.assertIn("image/png", runner.SHOW_DESCRIPTION)
