#!/usr/bin/env python3
"""The page of `phasegate report` in a real browser: headless Chromium loads the page
made from the fixture tree (fixtures.py), and
  - logs no console message (a control page with a console.error proves the log is
    read: the check could have failed),
  - builds the DOM we wrote: the matrix, the figures, the not-implemented phase, the
    captured markup as text (no <script>/<img> element made from a report string),
  - paints a non-blank screenshot: the PNG (decoded here with zlib, no imaging
    library) has enough non-white pixels, the heatmap's reds and the matrix's greens.
The screenshot is written into the build tree (OUT_DIR/report.png), never the source.
Exit 77 (skipped) when no Chromium is installed.

    chromium.py PHASEGATE FIXTURES_PY OUT_DIR
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

SKIP = 77
CONSOLE = re.compile(r":CONSOLE[:(]\d*\)?\]\s*(.*)")


def browser():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(chrome, out, args, url):
    cmd = [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--hide-scrollbars", "--user-data-dir=" + os.path.join(out, "profile"),
           "--enable-logging=stderr", "--v=0"] + args + [url]
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=120, cwd=out)
    consoles = [m.group(1) for m in CONSOLE.finditer(p.stderr)]
    return p, consoles


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, [[tuple(r[x * bpp:x * bpp + 3]) for x in range(w)] for r in rows]


def check_dom(dom, fails):
    need = {
        'the matrix': '<table class="matrix">',
        'a heatmap': "Error map of <b>scores</b>",
        'a histogram': "Elements and mismatches of <b>scores</b>",
        'the phase not implemented yet': "not implemented yet",
        'the captured markup, as text': "&lt;script&gt;alert(",
        'the case id, as text': "L3_&lt;b&gt;",
    }
    for what, text in need.items():
        if text not in dom:
            fails.append("DOM lacks %s (%r)" % (what, text))
    for tag in ("<script", "<img", "<iframe", "<link"):
        if tag in dom:
            fails.append("DOM has a %s> element" % tag)
    if dom.count("<svg") < 6:
        fails.append("DOM has %d <svg> figures, want >= 6" % dom.count("<svg"))


def check_png(path, fails):
    w, h, px = png_pixels(path)
    total = w * h
    nonwhite = sum(1 for row in px for p in row if min(p) < 245)
    reds = sum(1 for row in px for p in row if p[0] > 150 and p[1] < 110 and p[2] < 110)
    greens = sum(1 for row in px for p in row if p[1] > 200 and p[0] < 230 and p[1] - p[2] > 15)
    colours = len({p for row in px[::7] for p in row[::7]})
    print("screenshot %dx%d: %.1f%% non-white, %d red, %d green pixels, %d colours sampled"
          % (w, h, 100.0 * nonwhite / total, reds, greens, colours))
    if nonwhite < total * 0.05:
        fails.append("the screenshot is nearly blank")
    if reds < 500:
        fails.append("no heatmap reds in the screenshot")
    if greens < 100:
        fails.append("no passing (green) cells in the screenshot")
    if colours < 20:
        fails.append("only %d colours in the screenshot" % colours)


def main():
    pg, fixtures, out = sys.argv[1:4]
    chrome = browser()
    if not chrome:
        print("SKIP: no chromium on PATH (Debian: apt-get install chromium)")
        return SKIP
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    tree, page = os.path.join(out, "fx"), os.path.join(out, "report.html")
    subprocess.run([sys.executable, fixtures, tree], check=True)
    # relative paths: the page (and the screenshot docs/report.md shows) names fx/...
    subprocess.run([pg, "report", "--out", "report.html", "fx"], check=True, cwd=out,
                   stdout=subprocess.DEVNULL)
    fails = []

    control = os.path.join(out, "control.html")
    with open(control, "w") as f:
        f.write('<!DOCTYPE html><html><body><script>console.error("pg-control")</script></body></html>')
    _, consoles = run_chromium(chrome, out, ["--dump-dom"], "file://" + control)
    if not any("pg-control" in c for c in consoles):
        print("SKIP: this Chromium does not log console messages to stderr; cannot check")
        return SKIP

    p, consoles = run_chromium(chrome, out, ["--dump-dom"], "file://" + page)
    if p.returncode != 0:
        fails.append("chromium --dump-dom exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    for c in consoles:
        fails.append("console message: " + c)
    check_dom(p.stdout, fails)

    shot = os.path.join(out, "report.png")
    p, consoles = run_chromium(chrome, out, ["--screenshot=" + shot, "--window-size=1240,2000",
                                                  "--force-device-scale-factor=0.75"],
                               "file://" + page)
    for c in consoles:
        fails.append("console message (screenshot run): " + c)
    if not os.path.exists(shot):
        fails.append("no screenshot written: " + p.stderr[-2000:])
    else:
        check_png(shot, fails)
    for f in fails:
        print("FAIL:", f)
    print("screenshot:", shot)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
