"""``warpboard new-case`` (authoring/newcase.py): a case file from a CUDA source."""
from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path

import pytest
from warpboard.harness.case.model import load_case
from warpboard.authoring import newcase, toolchain

KERNEL = '''\
extern "C" __global__ void addlane(unsigned *out, const unsigned *in, unsigned k) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = in[t] + (threadIdx.x & 31) * k;
}
__global__ void mangled_one(unsigned *out) { out[threadIdx.x] = 1; }
'''


needs_tools = pytest.mark.skipif(not toolchain.cuda_tools_present(), reason="needs nvcc and nvdisasm")


def _source(tmp_path: Path, where: str = "cases/mine") -> Path:
    d = tmp_path / where
    d.mkdir(parents=True, exist_ok=True)
    src = d / "k.cu"
    src.write_text(KERNEL)
    return src


# ---------------------------------------------------------------- end to end

@needs_tools
def test_new_case_end_to_end(tmp_path, capsys):
    src = _source(tmp_path)
    out = tmp_path / "cases" / "mine" / "addlane.toml"
    rc = newcase.main([str(src), "--kernel", "addlane", "--out", str(out),
                       "--grid", "2", "--block", "48",
                       "--buffer", "out:96:0xdeadbeef", "--buffer", "in:96:random:7",
                       "--param", "buffer:out", "--param", "buffer:in", "--param", "u32:3",
                       "--tags", "multi-block,partial-warp", "--summary", "Adds lane * k."])
    assert rc == 0, capsys.readouterr().err
    assert "record-truth mine/addlane" in capsys.readouterr().out
    listing = out.parent / "k.sm_86.sass"
    assert ".text.addlane:" in listing.read_text()
    case = load_case(out)
    assert case.id == "mine/addlane" and case.kernel == "addlane"
    assert case.source == out.parent / "k.cu" and case.listing_path == listing
    assert case.provenance["expected"] == "pending"
    assert case.provenance["listing"].endswith(
        "-cubin -arch=sm_86 -o k.cubin k.cu && nvdisasm -c k.cubin > k.sm_86.sass")
    assert case.grid == (2, 1, 1) and case.block == (48, 1, 1)
    assert [(b.name, b.words, b.expected) for b in case.buffers] == [("out", 96, None), ("in", 96, None)]
    assert case.buffer("out").init == (0xDEADBEEF,) * 96
    assert case.buffer("in").init == tuple(newcase.make_init("random:7", 96, "x"))
    assert len(set(case.buffer("in").init)) > 90             # varies per thread
    assert [(p.kind, p.value) for p in case.params] == [("buffer", "out"), ("buffer", "in"), ("u32", 3)]
    assert case.tags == ("multi-block", "partial-warp") and case.summary == "Adds lane * k."
    assert "IADD3" in case.kernel_listing or "IMAD" in case.kernel_listing
    assert case.words is not None and len(case.words) % 16 == 0 and len(case.words) >= 16 * 5


@needs_tools
def test_a_case_from_a_cubin_alone(tmp_path, capsys):
    src = _source(tmp_path, "build")
    cubin = tmp_path / "build" / "k.cubin"
    toolchain.compile_cubin(src, cubin)
    out = tmp_path / "cases" / "bin" / "addlane.toml"
    rc = newcase.main(["--cubin", str(cubin), "--kernel", "addlane", "--out", str(out), "--block", "32",
                       "--buffer", "out:32:0", "--buffer", "in:32:iota", "--param", "buffer:out",
                       "--param", "buffer:in", "--param", "u32:2"])
    assert rc == 0, capsys.readouterr().err
    assert "instructions of machine code" in capsys.readouterr().out
    case = load_case(out)
    assert case.source is None and (out.parent / "k.cubin").is_file()
    assert case.provenance["expected"] == "pending" and case.provenance["listing"] == "nvdisasm -c k.cubin > k.sm_86.sass"
    assert case.words == {name[len(".text."):]: body for name, body in
                          newcase.cubin.sections(cubin.read_bytes()) if name.startswith(".text.")}["addlane"]
    assert newcase.main([str(src), "--cubin", str(cubin), "--kernel", "addlane", "--out", str(out)]) == 2


@needs_tools
def test_defaults_and_a_source_elsewhere_is_copied(tmp_path):
    src = _source(tmp_path, "elsewhere")
    out = tmp_path / "cases" / "cat" / "one.toml"
    assert newcase.main([str(src), "--kernel", "addlane", "--out", str(out), "--block", "64",
                         "--buffer", "out:64", "--buffer", "in:64:iota", "--param", "buffer:out",
                         "--param", "buffer:in", "--param", "u32:1"]) == 0
    assert (out.parent / "k.cu").read_text() == KERNEL
    case = load_case(out)
    assert case.buffer("out").init == (0,) * 64 and case.buffer("in").init == tuple(range(64))
    assert case.summary == "addlane from k.cu."


@needs_tools
def test_refuses_to_overwrite_without_force(tmp_path, capsys):
    src = _source(tmp_path)
    out = src.parent / "addlane.toml"
    args = [str(src), "--kernel", "addlane", "--out", str(out), "--param", "buffer:out",
            "--param", "buffer:out", "--param", "u32:1"]
    assert newcase.main(args) == 0
    assert newcase.main(args) == 2
    assert "exists (use --force" in capsys.readouterr().err
    assert newcase.main(args + ["--force"]) == 0


@needs_tools
def test_a_hand_edited_listing_is_not_overwritten_without_force(tmp_path, capsys):
    src = _source(tmp_path)
    args = [str(src), "--kernel", "addlane", "--param", "buffer:out", "--param", "buffer:out", "--param", "u32:1"]
    assert newcase.main(args + ["--out", str(src.parent / "a.toml")]) == 0
    listing = src.parent / "k.sm_86.sass"
    edited = listing.read_text() + "// a note by hand\n"
    listing.write_text(edited)
    assert newcase.main(args + ["--out", str(src.parent / "b.toml")]) == 2
    assert "k.sm_86.sass exists and differs from what nvcc gives now" in capsys.readouterr().err
    assert listing.read_text() == edited and not (src.parent / "b.toml").exists()
    assert newcase.main(args + ["--out", str(src.parent / "b.toml"), "--force"]) == 0
    assert listing.read_text() != edited
    assert "run_on_cpu.sh --collectives" in capsys.readouterr().out


@needs_tools
def test_unknown_and_mangled_kernels_are_named(tmp_path, capsys):
    src = _source(tmp_path)
    out = src.parent / "x.toml"
    assert newcase.main([str(src), "--kernel", "nosuch", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "kernel 'nosuch' is not in the sm_86 listing (kernels: " in err and "addlane" in err
    assert newcase.main([str(src), "--kernel", "mangled_one", "--out", str(out)]) == 2
    assert 'extern "C"' in capsys.readouterr().err
    assert not out.exists()


@needs_tools
def test_compile_errors_are_shown(tmp_path, capsys):
    src = tmp_path / "bad.cu"
    src.write_text('extern "C" __global__ void k(unsigned *o) { o[0] = nosuchname; }\n')
    assert newcase.main([str(src), "--kernel", "k", "--out", str(tmp_path / "k.toml")]) == 2
    err = capsys.readouterr().err
    assert "nvcc failed" in err and "nosuchname" in err


# ---------------------------------------------------------------- missing tools

def test_missing_nvcc_is_explained(tmp_path, monkeypatch, capsys):
    src = _source(tmp_path)
    monkeypatch.setattr(toolchain.shutil, "which", lambda name, *a, **k: None)
    monkeypatch.setattr(toolchain, "_cuda_homes", lambda: [])
    rc = newcase.main([str(src), "--kernel", "addlane", "--out", str(src.parent / "a.toml")])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("warpboard new-case: nvcc not found")
    assert "CUDA toolkit" in err
    assert not (src.parent / "a.toml").exists()


def test_missing_nvdisasm_is_explained(tmp_path, monkeypatch, capsys):
    src = _source(tmp_path)
    real_which = shutil.which
    monkeypatch.setattr(toolchain.shutil, "which",
                        lambda name, *a, **k: None if name == "nvdisasm" else real_which(name, *a, **k))
    monkeypatch.setattr(toolchain, "_wheel_nvdisasm", lambda: None)
    monkeypatch.setattr(toolchain, "find_nvcc", lambda: "/bin/true")
    rc = newcase.main([str(src), "--kernel", "addlane", "--out", str(src.parent / "a.toml")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "nvdisasm not found" in err and "nvidia-cuda-nvdisasm" in err


def test_wheel_lookup_finds_cu13_or_cu12(tmp_path, monkeypatch):
    pkg = types.ModuleType("nvidia")
    pkg.__path__ = [str(tmp_path / "a"), str(tmp_path / "b")]
    tool = tmp_path / "b" / "cu12" / "bin" / "nvdisasm"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setitem(sys.modules, "nvidia", pkg)
    monkeypatch.setattr(toolchain.shutil, "which", lambda name, *a, **k: None)
    assert toolchain.find_nvdisasm() == str(tool)
    (tmp_path / "a" / "cu13" / "bin").mkdir(parents=True)
    newer = tmp_path / "a" / "cu13" / "bin" / "nvdisasm"
    newer.write_text("#!/bin/sh\n")
    newer.chmod(0o755)
    assert toolchain.find_nvdisasm() == str(newer)


# ---------------------------------------------------------------- arguments

def test_init_specs():
    assert newcase.make_init("7", 3, "x") == 7
    assert newcase.make_init("0xffffffff", 3, "x") == 0xFFFFFFFF
    assert newcase.make_init("iota", 4, "x") == [0, 1, 2, 3]
    assert newcase.make_init("1,2,0x10", 3, "x") == [1, 2, 16]
    r = newcase.make_init("random:5", 64, "x")
    assert r == newcase.make_init("random:5", 64, "x") != newcase.make_init("random:6", 64, "x")
    assert all(0 <= w <= 0xFFFFFFFF for w in r)
    assert newcase.make_init("random", 8, "x") == newcase.make_init("random:1", 8, "x")


@pytest.mark.parametrize("spec, msg", [
    ("out", "expected name:words[:init]"),
    ("9out:4", "expected name:words[:init]"),
    ("out:four", "words 'four' is not an integer"),
    ("out:0", "at least one word"),
    ("out:3:1,2", "2 values, but the buffer has 3 words"),
    ("out:3:0x100000000", "is not a u32"),
])
def test_bad_buffer_specs(spec, msg):
    with pytest.raises(newcase.NewCaseError) as info:
        newcase.parse_buffer(spec)
    assert msg in str(info.value)


def test_param_specs():
    bufs = [newcase.parse_buffer("out:4")]
    assert newcase.parse_param("buffer:out", bufs) == ("buffer", "out")
    assert newcase.parse_param("u32:0x10", bufs) == ("u32", 16)
    assert newcase.parse_param("u64:0x100000000", bufs) == ("u64", 1 << 32)
    for spec, msg in [("buffer:in", "no buffer named 'in'"), ("u32:0x100000000", "does not fit"),
                      ("f32:1.5", "expected buffer:NAME")]:
        with pytest.raises(newcase.NewCaseError, match=msg):
            newcase.parse_param(spec, bufs)


def test_dims():
    assert newcase.parse_dims("64", "block") == [64]
    assert newcase.parse_dims("8,6", "block") == [8, 6]
    assert newcase.parse_dims("5x3x4", "block") == [5, 3, 4]
    for bad in ("0", "1,2,3,4", "a"):
        with pytest.raises(newcase.NewCaseError, match="--grid"):
            newcase.parse_dims(bad, "grid")


def test_written_text_is_a_valid_pending_case(tmp_path):
    (tmp_path / "k.cu").write_text(KERNEL)
    (tmp_path / "k.sm_86.sass").write_text(".text.addlane:\n        /*0000*/                   EXIT ;\n")
    text = newcase.case_text(
        name="addlane", summary='Says "hi".', tags=["loop"], kernel="addlane",
        listing="k.sm_86.sass", source="k.cu", listing_cmd="nvcc -cubin", grid=[2], block=[8, 6],
        buffers=[newcase.BufferArg("out", 96, 0), newcase.BufferArg("in", 96, list(range(96)))],
        params=[("buffer", "out"), ("buffer", "in"), ("u64", 5)])
    (tmp_path / "addlane.toml").write_text(text)
    case = load_case(tmp_path / "addlane.toml")
    assert case.summary == 'Says "hi".' and case.block == (8, 6, 1)
    assert case.buffer("in").init == tuple(range(96))
    assert case.provenance == {"expected": "pending", "listing": "nvcc -cubin"}
