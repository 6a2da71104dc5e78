import sys
from pathlib import Path

# the parity harness (bench/vllm_parity.py) makes the folders and the transformers side these tests compare with
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
