#!/usr/bin/python3
"""Checks an HTML report as a browser shows it: headless Chromium renders it offline.

Usage: check_html.py REPORT.html PNG SECTION...
1. The page itself: under 5 MB, no resource from the network (src=/href= with a scheme), every
   named SECTION (an element id) present.
2. Chromium's DOM after the report's script ran (--dump-dom): every chart the page describes
   drawn (body data-charts equals data-charts-expected), none blank, no script error.
3. Chromium's console (--enable-logging=stderr): no message from the page at all.
4. A screenshot (PNG, read with Pillow; the window 12000 px tall, so a 1,024-rank page's charts
   are in it): not blank, and the charts' colours are in it.
Prints what it found; exits 1 naming the first problem, 77 when Chromium is missing.
SHAKEDOWN_CHROMIUM names the browser binary (default: chromium on the PATH).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    print(f"check_html: {msg}", file=sys.stderr)
    sys.exit(1)


BROWSER = os.environ.get("SHAKEDOWN_CHROMIUM", "chromium")


def chromium(args, profile):
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--disable-extensions", "--disable-background-networking",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0"] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def main():
    html_path, png_path, sections = sys.argv[1], sys.argv[2], sys.argv[3:]
    page = open(html_path, encoding="utf-8").read()
    size = os.path.getsize(html_path)
    if size > 5 * 1024 * 1024:
        fail(f"{html_path} is {size} bytes (more than 5 MB)")
    remote = re.findall(r'(?:src|href)\s*=\s*"(?:https?:)?//[^"]*"', page)
    if remote:
        fail(f"{html_path} loads from the network: {remote[:3]}")
    for s in sections:
        if f'id="{s}"' not in page:
            fail(f"{html_path} has no section id=\"{s}\"")
    expected = int(re.search(r'data-charts-expected="(\d+)"', page).group(1))
    print(f"page: {size} bytes, {expected} charts described, sections {' '.join(sections)}")
    if shutil.which(BROWSER) is None:
        print(f"check_html: SKIP: {BROWSER} is not installed (scripts/install-deps.sh installs "
              "Debian's chromium)")
        sys.exit(77)
    url = "file://" + os.path.abspath(html_path)
    with tempfile.TemporaryDirectory() as profile:
        dom = chromium(["--dump-dom", url], profile)
        shot = chromium(["--window-size=1280,12000", f"--screenshot={png_path}", url], profile)
    body = re.search(r"<body[^>]*>", dom.stdout)
    if dom.returncode != 0 or body is None:
        fail(f"chromium --dump-dom failed ({dom.returncode}): {dom.stderr[-500:]}")
    attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(0)))
    if attrs.get("charts") != str(expected):
        fail(f"the browser drew {attrs.get('charts')} of {expected} charts; {body.group(0)}")
    if attrs.get("errors") != "0" or attrs.get("blank"):
        err = re.search(r'id="report-errors"[^>]*>([^<]*)<', dom.stdout)
        fail(f"script errors {attrs.get('errors')}, blank charts [{attrs.get('blank')}]: "
             f"{err.group(1) if err else ''}")
    print(f"dom: {attrs['charts']} charts drawn, none blank, no script error")
    # The page writes nothing to the console: any message (Chromium logs them all at INFO,
    # console.error and uncaught exceptions alike) is a problem.
    console = [line for line in (dom.stderr + shot.stderr).splitlines() if ":CONSOLE" in line]
    if console:
        fail(f"console errors: {console[:3]}")
    if shot.returncode != 0 or not os.path.exists(png_path):
        fail(f"chromium --screenshot failed ({shot.returncode}): {shot.stderr[-500:]}")
    from PIL import Image
    image = Image.open(png_path).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20) or []
    background = max(colours)[0] if colours else 0
    ink = image.width * image.height - background  # pixels not of the background colour
    # The first palette colour (#1f77b4) appears where a chart drew a line, bar or legend.
    blue = sum(n for n, c in colours if abs(c[0] - 0x1f) < 16 and abs(c[1] - 0x77) < 16 and abs(c[2] - 0xb4) < 16)
    if len(colours) < 50 or ink < 100000:
        fail(f"the screenshot looks blank: {len(colours)} colours, {ink} pixels not background")
    if blue < 200:
        fail(f"the screenshot shows no chart colour (#1f77b4: {blue} pixels)")
    print(f"png: {image.width}x{image.height}, {len(colours)} colours, {ink} pixels of ink, "
          f"{blue} pixels of the first series colour")


if __name__ == "__main__":
    main()
