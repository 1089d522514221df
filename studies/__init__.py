"""Studies of translators and devices: ``bench`` (speed against native CUDA and between
modes), the MUFU sweeps and rates, and ``fuzz`` (generated programs, their campaigns and
reduction). They use the runner (``warpboard.harness``) and the authoring tools; the runner
never imports them."""
