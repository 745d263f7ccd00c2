"""Round 7 differential probes (reliab): see tools/probe2.py --dir probes7."""
