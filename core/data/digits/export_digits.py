#!/usr/bin/python3
"""Writes digits.csv: the UCI optical digits as scikit-learn ships them.

Usage: /usr/bin/python3 core/data/digits/export_digits.py [OUT]   (default: next to this script)

scikit-learn's `load_digits()` is a copy of the test part (optdigits.tes,
1797 images) of the UCI "Optical Recognition of Handwritten Digits" data set
(Alpaydin & Kaynak, 1998; CC BY 4.0; see README.md). Each row of the output is
`label,p0,...,p63`: the digit 0-9, then the 8x8 image row by row, every pixel
an integer count 0-16. Rows keep scikit-learn's order. Stdlib + sklearn only;
a rerun writes the same bytes (core/data:digits_export_test checks it).
"""
import os
import sys

from sklearn.datasets import load_digits


def main(argv):
    out = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "digits.csv")
    d = load_digits()
    images = d.images.reshape(len(d.images), 64)
    lines = ["label," + ",".join(f"p{i}" for i in range(64))]
    for label, img in zip(d.target, images):
        pixels = [int(v) for v in img]
        assert all(0 <= v <= 16 for v in pixels) and all(float(v) == w for v, w in zip(pixels, img))
        lines.append(f"{int(label)}," + ",".join(str(v) for v in pixels))
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, out)
    print(f"wrote {out}: {len(images)} images", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
