"""OpInfo entries, one module per op family (see ember/testing/_opinfo.py)."""
