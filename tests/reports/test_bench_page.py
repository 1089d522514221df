"""The bench page: each bench kernel's time per mode beside native CUDA, as inline SVG charts
that load nothing from the web, and the ratios over native."""
import re

from warpboard.reports import bench_page, cli

BENCH = {"created": "2026-12-07T00:00:00Z", "native": {"bench_vote_loop_ms": 0.2},
         "rows": [{"case": "bench/bench_vote_loop", "device": "gpu", "mode": "turns", "gpu_s": {"median": 0.0006}},
                  {"case": "bench/bench_vote_loop", "device": "gpu", "mode": "subgroup-native",
                   "gpu_s": {"median": 0.0016}},
                  {"case": "basic/bit_ops", "device": "gpu", "mode": "free", "gpu_s": {"median": 0.001}}]}


def test_times_per_kernel_and_device_beside_native():
    assert bench_page.kernel_times(BENCH) == {("bench_vote_loop", "gpu"): {
        "turns": 0.6, "subgroup-native": 1.6, "native": 0.2}}


def test_the_page_is_self_contained_svg_with_the_ratios(tmp_path):
    out = tmp_path / "bench.html"
    src = tmp_path / "bench.json"
    src.write_text(__import__("json").dumps(BENCH))
    assert cli.report_main([str(src), "--bench", "-o", str(out)]) == 0
    page = out.read_text()
    assert page.count("<svg") == 1 and not re.search(r"(src|href)=\"https?:", page)
    assert "3.00×" in page and "8.00×" in page
