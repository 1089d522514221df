"""``warpboard corpus``: manifests, what blocks a kernel, the totals and the table, and one
run through nvcc, nvdisasm, the translator and spirv-val on a small code base."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from warpboard.cli import main as warpboard
from warpboard.authoring import corpus, toolchain
from warpboard.translator.errors import UnsupportedInstruction
from warpboard.translator.sass.listing import parse_listing

LISTING = """\
\t.target\tsm_86

//--------------------- .text.good              --------------------------
\t.section\t.text.good,"ax",@progbits
good:
.text.good:
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   EXIT ;

//--------------------- .text.bad               --------------------------
\t.section\t.text.bad,"ax",@progbits
bad:
.text.bad:
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   FROB R1, R0 ;
        /*0020*/                   TEX.SCR.LL R0, R2, R4, R0, 0x0, 0x5a, 2D ;
        /*0030*/                   FROB.X R2, R0 ;
        /*0040*/                   EXIT ;
"""

SOURCE = r'''
extern "C" __global__ void add_one(unsigned *out) { out[threadIdx.x] += 1; }
extern "C" __global__ void lane_xor(unsigned *out) {
    out[threadIdx.x] = __shfl_xor_sync(0xffffffff, out[threadIdx.x], 1);
}
'''


def _have_tools() -> bool:
    return toolchain.cuda_tools_present() and shutil.which("spirv-val") is not None


needs_tools = pytest.mark.skipif(not _have_tools(), reason="needs nvcc, nvdisasm and spirv-val")


def test_blocker_key_names_the_opcode_or_the_missing_modifier():
    unknown = UnsupportedInstruction("k.sass:3: unknown opcode FSETP.GEU.AND", "FSETP.GEU.AND")
    modifier = UnsupportedInstruction("k.sass:4: unsupported modifier .POPC of ATOMS in 'ATOMS...'",
                                      "ATOMS.POPC.INC.32")
    other = UnsupportedInstruction("k.sass:5: constant bank 3 in 'MOV R0, c[0x3][0x0]'", "MOV")
    assert [corpus.blocker_key(e) for e in (unknown, modifier, other)] == ["FSETP", "ATOMS.POPC", "MOV"]


def test_every_blocking_instruction_of_a_kernel_is_counted_once():
    sections = parse_listing(LISTING, "t.sass")
    assert corpus.decode_blockers(sections["good"]) == []
    assert corpus.decode_blockers(sections["bad"]) == ["FROB", "TEX"]


def test_classify_kernel_reports_the_first_blocker_and_all_of_them():
    row = corpus.classify_kernel(LISTING, "bad", "t.sass")
    assert row["status"] == "unsupported"
    assert row["opcode"] == "FROB"
    assert row["message"].startswith("t.sass:")
    assert row["blockers"] == ["FROB", "TEX"]
    assert row["insts"] == 5 and len(row["digest"]) == 16


def test_manifest_round_trips_and_rejects_unknown_keys(tmp_path):
    base = corpus.CodeBase("demo", tmp_path / "tree", "https://example.invalid/demo", ["inc"],
                           ["-std=c++17"], ["a.cu", "sub/b.cu"], {"c.cu": "x.h: no such file"})
    path = tmp_path / "m.toml"
    path.write_text(corpus.manifest_text([base], {"demo": "tree"}))
    (loaded,) = corpus.load_manifest(path)
    assert (loaded.name, loaded.root, loaded.include, loaded.flags, loaded.files, loaded.skipped) == \
        ("demo", (tmp_path / "tree").resolve(), ["inc"], ["-std=c++17"], ["a.cu", "sub/b.cu"],
         {"c.cu": "x.h: no such file"})
    path.write_text('[[codebase]]\nname = "x"\nroot = "."\nfile = ["a.cu"]\n')
    with pytest.raises(corpus.CorpusError, match=r"m.toml: codebase #1: .*unknown keys \['file'\]"):
        corpus.load_manifest(path)


def test_summary_counts_statuses_per_code_base_and_blockers_over_all():
    bases = [corpus.CodeBase("one", Path(".")), corpus.CodeBase("two", Path("."))]
    rows = lambda *specs: [{"kernel": f"k{i}", "status": s, "opcode": op, "message": "m",  # noqa: E731
                            "insts": 4, "blockers": b, "digest": f"d{i}"}
                           for i, (s, op, b) in enumerate(specs)]
    entries = [
        {"codebase": "one", "file": "a.cu", "compile_error": None,
         "kernels": rows(("translates", None, []), ("unsupported", "FADD", ["FADD", "FSEL"]))},
        {"codebase": "one", "file": "b.cu", "compile_error": "b.cu: error", "kernels": []},
        {"codebase": "one", "file": "d.cu", "compile_error": None,        # a.cu's kernels again
         "kernels": rows(("translates", None, []), ("unsupported", "FADD", ["FADD", "FSEL"]))},
        {"codebase": "two", "file": "c.cu", "compile_error": None,
         "kernels": rows(("unsupported", "FADD", ["FADD"]), ("invalid", None, []), ("error", None, []))},
    ]
    s = corpus.summarize(entries, bases)
    assert s["codebases"]["one"] == {"source": "", "files": 3, "compile_errors": 1, "skipped": 0,
                                    "kernels": 2, "translates": 1, "unsupported": 1,
                                    "invalid": 0, "error": 0}
    assert s["total"]["kernels"] == 5 and s["total"]["translates"] == 1 and s["total"]["error"] == 1
    assert s["blockers"] == [("FADD", 2), ("FSEL", 1)]
    assert s["first_blockers"] == [("FADD", 2)]
    md = corpus.render_markdown(s, entries, {"files": 4, "nvcc": "13.0", "command": "warpboard corpus m"})
    assert "| **total** | 4 | 1 | 5 | 1 (20.0 %) | 2 | 1 | 1 |" in md
    assert "| `FADD` | 2 | 2 |" in md
    assert "| two | c.cu | `k1` | invalid | m |" in md
    assert "d.cu" not in md


@needs_tools
def test_corpus_command_compiles_classifies_and_discovers(tmp_path, capsys):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "ok.cu").write_text(SOURCE)
    (tree / "broken.cu").write_text('#include "missing_header.h"\n')
    manifest = tmp_path / "m.toml"
    manifest.write_text('[[codebase]]\nname = "mine"\nroot = "tree"\nfiles = []\n')
    out = tmp_path / "runs" / "corpus"
    argv = [str(manifest), "--out", str(out), "--jobs", "1", "--cache", str(tmp_path / "cache")]
    assert warpboard(["corpus", *argv, "--discover"]) == 0
    (base,) = corpus.load_manifest(manifest)
    assert base.files == ["ok.cu"]
    assert "missing_header.h" in base.skipped["broken.cu"]
    table = json.loads(out.with_suffix(".json").read_text())
    kernels = {k["kernel"]: k["status"] for f in table["files"] for k in f["kernels"]}
    assert kernels == {"add_one": "translates", "lane_xor": "translates"}
    assert "2 kernels in 2 files: 2 translate (100.0 %)" in capsys.readouterr().out
    assert warpboard(["corpus", *argv]) == 0        # from the manifest now, listings from the cache
    assert json.loads(out.with_suffix(".json").read_text())["summary"]["total"]["files"] == 1
    assert "| mine | 1 | 1 | 2 | 2 (100.0 %) |" in out.with_suffix(".md").read_text()


def test_manifest_roots_expand_variables_and_name_unset_ones(tmp_path, monkeypatch):
    path = tmp_path / "m.toml"
    path.write_text('[[codebase]]\nname = "x"\nroot = "$CORPUS_TEST_SRC/x"\n')
    monkeypatch.setenv("CORPUS_TEST_SRC", str(tmp_path / "src"))
    assert corpus.load_manifest(path)[0].root == (tmp_path / "src" / "x").resolve()
    monkeypatch.delenv("CORPUS_TEST_SRC")
    with pytest.raises(corpus.CorpusError, match=r"m.toml: codebase x: root '\$CORPUS_TEST_SRC/x' "
                                                 "names an unset environment variable"):
        corpus.load_manifest(path)
