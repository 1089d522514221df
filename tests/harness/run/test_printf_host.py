"""printf on the host: the formatter against the C library's own snprintf, how arguments are
packed, the line comparison and its message, a cell's printf output in the results and the
reports, the case file's [[strings]] and [printf] tables, and record-truth's capture of what
the kernel prints (with fakes: no GPU here)."""
from __future__ import annotations

import ctypes
import json
import math
import os
import random
import struct
import sys

import pytest
from warpboard.harness.case.model import CaseError
from warpboard.harness.run.engine import run_case
from warpboard.harness.run.printf import (
    Printed,
    compare_lines,
    format_record,
    split_lines,
)
from warpboard.authoring import truth
from warpboard.authoring.stdout import captured_stdout
from warpboard.reports import render

LIBC = ctypes.CDLL(None) if sys.platform.startswith("linux") else None
STRINGS = {0x7F07_1000_0040: b"xyz", 0x7F07_1000_0050: b""}
C_TYPES = {"i": ctypes.c_int, "I": ctypes.c_uint, "q": ctypes.c_longlong, "d": ctypes.c_double}


def pack(args) -> bytes:
    """An argument buffer as nvcc lays it out: each value aligned to its size."""
    out = bytearray()
    for kind, value in args:
        size = struct.calcsize(kind)
        out += bytes(-len(out) % size) + struct.pack("<" + kind, value)
    return bytes(out)


def c_printf(fmt: str, args) -> str:
    """glibc's snprintf of the same format and arguments (%s/%p: the pointer's string)."""
    c_args = []
    for kind, value in args:
        if kind == "Q":
            c_args.append(ctypes.c_char_p(STRINGS[value]) if value in STRINGS else ctypes.c_void_p(value))
        else:
            c_args.append(C_TYPES[kind](value))
    buf = ctypes.create_string_buffer(4096)
    LIBC.snprintf(buf, len(buf), fmt.encode(), *c_args)
    return buf.value.decode("utf-8", "backslashreplace")


INTS = [0, 1, -1, 42, -42, 0x7FFFFFFF, -0x80000000, 1234567]
FLOATS = [0.0, -0.0, 1.0, -1.5, 0.1, 123456.789, 1e-7, 1e21, 2.5, 3.5, math.inf, -math.inf,
          math.nan, -math.nan, 5e-324, 1.7976931348623157e308]
FLAGS = ["", "-", "+", " ", "#", "0", "-0", "+0", "#0", "- "]
SHAPES = ["", "5", "12", ".0", ".3", "8.3", "1.10", ".12"]


def vectors():
    """(format, arguments) pairs over conversions, flags, widths, precisions and modifiers."""
    rng = random.Random(15)
    out = []
    for conv in "diouxX":
        for flags in FLAGS:
            for shape in SHAPES:
                out.append((f"[%{flags}{shape}{conv}]", [("i", rng.choice(INTS))]))
    for conv in "eEfFgG":
        for flags in FLAGS:
            for shape in SHAPES[:6]:
                for value in rng.sample(FLOATS, 3):
                    out.append((f"[%{flags}{shape}{conv}]", [("d", value)]))
    for value in FLOATS:
        out.append(("[%a|%A|%-20a]", [("d", value)] * 3))
    for length, kind, values in (("hh", "i", [300, -129, 255]), ("h", "i", [70000, -32769]),
                                 ("l", "q", [-2**63, 2**40]), ("ll", "q", [-5, 2**63 - 1]),
                                 ("j", "q", [7]), ("z", "q", [2**33]), ("t", "q", [-2])):
        for value in values:
            for conv in "dux":
                out.append((f"%{length}{conv}:%08{length}{conv}", [(kind, value)] * 2))
    out += [("%c%c%-3c|%3c", [("i", 65), ("i", 0x162), ("i", 66), ("i", 67)]),
            ("%s|%5s|%-5s|%.1s|%5.2s", [("Q", 0x7F07_1000_0040)] * 5),
            ("%s|%p|%p|%10p", [("Q", 0x7F07_1000_0050), ("Q", 0), ("Q", 0x1234), ("Q", 0xBEEF)]),
            ("100%% %d%%", [("i", 5)]),
            ("%*d|%-*d|%.*f|%*.*e", [("i", 6), ("i", 7), ("i", -6), ("i", 8), ("i", 2), ("d", 3.14159),
                                     ("i", 12), ("i", 3), ("d", 2.5e-3)]),
            ("%d %f %d", [("i", 1), ("d", 0.5), ("i", 2)])]    # a double after an int: aligned to 8
    return out


@pytest.mark.skipif(LIBC is None, reason="needs the C library's snprintf (Linux)")
def test_the_formatter_prints_what_glibc_prints():
    differ = [(fmt, args, format_record(fmt.encode(), pack(_host(args)), STRINGS.get), c_printf(fmt, args))
              for fmt, args in vectors()]
    differ = [d for d in differ if d[2] != d[3]]
    assert not differ, "\n".join(f"{f!r} {a}: ours {o!r}, glibc {c!r}" for f, a, o, c in differ[:10])
    assert len(vectors()) > 900


def _host(args):
    """The argument buffer's kinds: pointers are 8-byte words, the rest as they are."""
    return [("Q" if kind == "Q" else kind, value) for kind, value in args]


def test_floats_are_promoted_to_double_and_each_argument_aligned_to_its_size():
    # printf("%d %f %lld %c", 1, 0.5f, 7ll, 'z') as nvcc stores it: int@0, double@8, long long@16, int@24
    data = struct.pack("<i4xdqi", 1, 0.5, 7, ord("z"))
    assert format_record(b"%d %f %lld %c", data, STRINGS.get) == "1 0.500000 7 z"


def test_missing_arguments_and_unknown_strings_are_shown():
    assert format_record(b"%d %d", struct.pack("<i", 3), STRINGS.get) == "3 (missing argument)"
    assert format_record(b"%s", struct.pack("<Q", 0x99), STRINGS.get) == "(no string at 0x99)"
    assert format_record(b"%s|%n|%5%", struct.pack("<QQ", 0, 0), STRINGS.get) == "(null)||%"


def test_split_lines():
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\n\nb") == ["a", "", "b"]
    assert split_lines("") == []


# ---------------------------------------------------------------- comparison

def test_lines_compare_as_a_multiset_and_the_message_names_them():
    got = Printed({3: ["x=7", "y=1"], 1: ["y=1"]})
    assert compare_lines(["y=1", "x=7", "y=1"], got).count == 0
    diff = compare_lines(["y=1", "x=5", "y=1"], got)
    assert diff.missing == ["x=5"] and diff.extra == [(3, "x=7")]
    assert diff.describe() == 'printf: expected line "x=5" not printed; extra line "x=7" from thread 3'
    many = compare_lines([f"l{k}" for k in range(7)], Printed(dropped=2))
    assert many.describe().endswith('"l4" not printed (+2 more); 2 calls found the printf buffer full')


def test_a_wrong_line_fails_the_cell_and_its_output_is_in_the_results(make_case):
    make_case.copy("printf/loop", edit=lambda t: t.replace('"t3 k0 sum=2239039009"', '"t3 k0 sum=1"'))
    result = run_case(make_case.load("printf/loop"), "interp")
    assert result.status.value == "FAIL"
    assert result.message == ('printf: expected line "t3 k0 sum=1" not printed; '
                              'extra line "t3 k0 sum=2239039009" from thread 3')
    threads = {e["thread"]: e["lines"] for e in result.printf["threads"]}
    assert threads[2] == ["t2 k0 sum=50056527", "t2 k1 sum=75084790", "t2 k2 sum=87598921"]
    assert result.printf["missing"] == ["t3 k0 sum=1"] and result.mismatch_count == 2
    again = type(result).from_json(json.loads(json.dumps(result.to_json())))
    assert again.run == result.run and again.printf == result.printf


def test_the_reports_show_each_threads_lines():
    lines = {"threads": [{"thread": 1, "lines": ["a <b>", "c   d"]}, {"thread": 5, "lines": ["e"]},
                         {"thread": 9, "lines": ["f"]}], "dropped": 0}
    doc = {"version": 1, "devices": [{"id": "interp"}, {"id": "gpu"}],
           "cases": [{"id": "printf/x", "threads": 32}],
           "results": [{"case": "printf/x", "device": d, "status": "PASS", "printf": lines} for d in ("interp", "gpu")]}
    term = render.terminal(doc)
    assert 'printf/x on interp, gpu: 4 lines from 3 threads' in term and 'thread 1: "c   d"' in term
    assert 'thread 9: "f"' not in term and "... 1 more threads" in term    # the terminal shows two
    md = render.markdown(doc)
    assert "  thread 9: \"f\"" in md and "```text" in md
    page = render.html(doc)
    assert 'title="printf: 4 lines from 3 threads\nthread 1: &#34;a &lt;b&gt;&#34;' in page    # autoescaped
    assert '<pre class="pf">a &lt;b&gt;\nc   d</pre>' in page


# ---------------------------------------------------------------- the case file

CALLS = {"sass": "        /*0000*/                   EXIT ;\n"}


@pytest.mark.parametrize("extra, message", [
    ('[[strings]]\noffset = 0\ntext = "abc"\n\n[[strings]]\noffset = 3\ntext = "d"\n',
     "strings[1].offset: 0x3 is inside the string at 0x0 (with its NUL)"),
    ('[[strings]]\noffset = 0\ntext = "a\\u0000b"\n', "strings[0].text: holds a NUL character"),
    ('[printf]\nexpected = ["a\\nb"]\n', "printf.expected[0]: a line holds no newline"),
    ('[printf]\nexpected = "a"\n', "printf.expected: must be an array of strings"),
    ('[printf]\nlines = []\n', "unknown key 'printf.lines' (allowed: expected)"),
])
def test_bad_printf_tables_are_located(make_case, extra, message):
    path = make_case.write("bad", **CALLS)
    path.write_text(path.read_text() + "\n" + extra)
    with pytest.raises(CaseError, match=r"bad\.toml:\d+: ") as info:
        make_case.load("bad")
    assert message in str(info.value)


def test_a_case_with_strings_has_room_for_seven_buffers(make_case):
    buffers = [{"name": f"b{k}", "words": 1, "init": 0, "expected": [0]} for k in range(8)]
    path = make_case.write("many", buffers=buffers, **CALLS)
    path.write_text(path.read_text() + '\n[[strings]]\noffset = 0\ntext = "x"\n')
    with pytest.raises(CaseError) as info:
        make_case.load("many")
    assert str(info.value).endswith(f"many.toml:{path.read_text().splitlines().index('[[strings]]') + 1}: "
                                    "strings: a case with [[strings]] has at most 7 buffers, this one 8 "
                                    "(buffer slot 7 holds the strings)")


def test_strings_become_the_global_data(make_case):
    path = make_case.write("ok", **CALLS)
    path.write_text(path.read_text() + '\n[[strings]]\noffset = 4\ntext = "hé"\n\n[printf]\nexpected = []\n')
    case = make_case.load("ok")
    assert case.global_data == b"\0\0\0\0h\xc3\xa9\0" and case.printf_expected == ()


# ---------------------------------------------------------------- record-truth

def test_captured_stdout_holds_what_c_stdio_and_the_descriptor_got():
    libc = ctypes.CDLL(None)
    with captured_stdout() as out:
        libc.printf(b"from C %d\n", 42)
        os.write(1, b"raw\n")
    assert sorted(split_lines(out.text)) == ["from C 42", "raw"]


class PrintingRunner:
    """A GPU stand-in that prints lines (in an order that changes per run)."""

    def __init__(self, lines):
        self.lines, self.runs = lines, 0

    def info(self):
        return truth.GpuInfo("Fake GPU", (9, 0), "13.0", "1.0")

    def run(self, case):
        self.runs += 1
        order = self.lines[self.runs % 2:] + self.lines[:self.runs % 2]
        return truth.Launched([[w ^ 1 for w in b.init] for b in case.buffers], order)


def test_record_truth_writes_the_printed_lines_into_the_case(make_case, tmp_path):
    path = make_case.copy("printf/odd_lanes", edit=lambda t: t.split("\n[printf]")[0])
    results: dict = {}
    [out] = truth.record([make_case.load("printf/odd_lanes")], PrintingRunner(["b \"q\"", "a"]), force=True,
                         results=results)
    assert out.status == "recorded" and out.message.endswith("and 2 printf lines")
    case = make_case.load("printf/odd_lanes")
    assert sorted(case.printf_expected) == ["a", 'b "q"'] and case.provenance["expected"] == "chip"
    assert results["cases"]["printf/odd_lanes"]["printf"] == list(case.printf_expected)
    json_path = tmp_path / "truth.json"
    json_path.write_text(json.dumps(results))
    path.write_text(path.read_text().replace('"b \\"q\\"",', '"c",'))
    assert sorted(make_case.load("printf/odd_lanes").printf_expected) == ["a", "c"]
    [again] = truth.apply_json([make_case.load("printf/odd_lanes")], json.loads(json_path.read_text()), force=True)
    assert again.status == "recorded" and make_case.load("printf/odd_lanes").printf_expected == case.printf_expected


def test_runs_that_print_different_lines_are_not_recorded(make_case):
    make_case.copy("printf/odd_lanes")

    class Flaky(PrintingRunner):
        def run(self, case):
            launched = super().run(case)
            return truth.Launched(launched.buffers, [f"run {self.runs}"])

    [out] = truth.record([make_case.load("printf/odd_lanes")], Flaky([]), force=True)
    assert out.status == "failed" and "printed different lines" in out.message


def test_a_case_that_prints_nothing_gets_no_printf_table(make_case):
    make_case.copy("basic/bit_ops")
    case = make_case.load("basic/bit_ops")
    assert truth.printf_to_record(case, []) is None
    assert truth.printf_to_record(case, ["x"]) == ["x"]
