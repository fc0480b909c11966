# Where a test needs PyTorch: the reason it gives when it skips without it.
FASTMTP_EXTRA = "needs the fastmtp extra (pip install -e '.[fastmtp]'; make test installs it)"
