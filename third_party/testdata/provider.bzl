"""CcInfo read without its load."""

def _impl(ctx):
    return ctx.attr.dep[CcInfo]
