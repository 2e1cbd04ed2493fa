"""ddp-pitfalls' guard: catches the suite's six DDP pitfalls in a user's own
PyTorch job, at the first step where each becomes knowable.

    from ddp_pitfalls import guard
    guard.install(mode="raise")        # or "warn", "off"; checks={"small_batch_bn": False}

See guard/README.md in the ddp-pitfalls repository.
"""
__version__ = "0.1.0"
