"""Capture: real CUDA programs' kernel launches, recorded on an NVIDIA GPU, as cases.

``record`` (the GPU side) runs a program under the CUPTI interposer ``interposer.c``;
``log`` reads what it recorded; ``cases`` turns each faithful launch into a case file and
lists the rest with their reasons, with what ``cubins`` reads of the program's cubins
(constant banks, bank-4 relocations); ``programs`` builds the public code bases' programs and
captures them in one go (``warpboard corpus --capture``); ``cli`` is ``warpboard capture``.
"""
