"""A case's machine code: the words load with the case, nvdisasm prints them back as the
listing's instructions, and a listing edited away from its words is an error naming the
first instruction that differs."""

import shutil

import pytest
from warpboard.harness.case.model import CaseError, discover_cases, load_case, scan_cases
from warpboard.harness.case.words import INSTRUCTION_BYTES, find_nvdisasm, spellings

from support.paths import CASES

needs_nvdisasm = pytest.mark.skipif(find_nvdisasm() is None, reason="needs nvdisasm (pip install .[test])")


def test_a_case_carries_its_kernels_words():
    case = load_case(CASES / "vote" / "vote_uni.toml")
    assert case.words is not None and len(case.words) % INSTRUCTION_BYTES == 0
    assert len(case.words) // INSTRUCTION_BYTES == len(spellings(case.kernel_listing, case.kernel))


@needs_nvdisasm
def test_every_library_case_s_words_are_its_listing():
    cases, broken = scan_cases(CASES)
    assert not broken, "\n".join(b.message for b in broken)
    with_words = [c.id for c in cases if c.words is not None]
    assert len(with_words) == len(cases), sorted({c.id for c in cases} - set(with_words))


@pytest.fixture()
def vote_copy(tmp_path):
    root = tmp_path / "cases"
    shutil.copytree(CASES / "vote", root / "vote")
    return root


@needs_nvdisasm
def test_a_listing_edited_away_from_its_words_is_an_error_at_load(vote_copy, monkeypatch):
    monkeypatch.setenv("WARPBOARD_CACHE", "off")
    listing = vote_copy / "vote" / "kernels.sm_86.sass"
    text = listing.read_text()
    start = text.index(".text.vote_uni:")
    at = text.index("S2R R7, SR_TID.X", start)
    listing.write_text(text[:at] + "S2R R9, SR_TID.X" + text[at + len("S2R R7, SR_TID.X"):])
    with pytest.raises(CaseError) as err:
        load_case(vote_copy / "vote" / "vote_uni.toml", vote_copy)
    message = str(err.value)
    assert message.startswith(f"{vote_copy / 'vote' / 'vote_uni.toml'}:")
    assert "instruction 0x0010: words say 'S2R R7, SR_TID.X', listing says 'S2R R9, SR_TID.X'" in message
    cases, broken = scan_cases(vote_copy)           # the other kernels of the listing still load
    assert [b.id for b in broken] == ["vote/vote_uni"] and "instruction 0x0010" in broken[0].message
    assert {c.id for c in cases} >= {"vote/any_steered_loop", "vote/vote_split_masks"}


def test_words_whose_hash_differs_are_refused(vote_copy):
    case_file = vote_copy / "vote" / "vote_uni.toml"
    data = next((vote_copy / "vote" / "data").glob("*.sm86"))
    data.write_bytes(data.read_bytes()[:-16] + bytes(16))
    with pytest.raises(CaseError, match="words.file: .* have sha256"):
        load_case(case_file, vote_copy)


def test_a_slice_past_the_end_of_the_file_is_refused(vote_copy):
    case_file = vote_copy / "vote" / "vote_uni.toml"
    text = case_file.read_text()
    case_file.write_text(text.replace("size = 1280", "size = 128000"))
    with pytest.raises(CaseError, match="past the end"):
        load_case(case_file, vote_copy)
    assert discover_cases(vote_copy, ["vote/vote_split_masks"])
