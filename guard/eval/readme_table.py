"""--table for coverage.py and overhead.py: print a table, or put it
between a README's `<!-- table:ID:begin -->` / `<!-- table:ID:end -->`
markers (--update README --id ID). Stdlib only, so the tables test needs no
torch."""
import os
import sys


def add_flags(ap, default_id):
    ap.add_argument("--table", nargs="+", metavar="JSON",
                    help="print the README table from these records (older PyTorch first)")
    ap.add_argument("--update", metavar="README", help="with --table: write it into this file")
    ap.add_argument("--id", default=default_id,
                    help="with --update: the marker id (default %s)" % default_id)


def emit(args, text):
    if not args.update:
        sys.stdout.write(text)
        return 0
    try:
        with open(args.update) as f:
            doc = f.read()
    except OSError as e:
        print("--update %s: cannot read it (%s)" % (args.update, e.strerror), file=sys.stderr)
        return 2
    head, tail = "<!-- table:%s:begin -->\n" % args.id, "<!-- table:%s:end -->" % args.id
    start, stop = doc.find(head), doc.find(tail)
    if start < 0 or stop < start:
        print("%s: markers %s ... %s not found" % (args.update, head.strip(), tail),
              file=sys.stderr)
        return 2
    new = doc[:start + len(head)] + text + doc[stop:]
    part = args.update + ".part%d" % os.getpid()
    with open(part, "w") as f:
        f.write(new)
    os.replace(part, args.update)
    return 0
