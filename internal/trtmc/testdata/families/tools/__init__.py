"""qualkit stand-in: TRTMC's tools package (tools/__init__.py @ 4a894e2e) holds the e2e evidence plugin."""
