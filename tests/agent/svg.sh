#!/usr/bin/env bash
# The SVG flame graph end to end: record the 75/25 split fixture with call
# chains, render it with `kvmprof-agent report --format svg`, check the XML
# with xmllint, then open it in headless Chromium: the DOM it builds must
# hold the hot function's name in a <text> label, and a screenshot must show
# the hot function's box in its own colour where the SVG put it.
# Prints "PASS name" / "FAIL name: why" / "SKIP name: why" (SKIP only when
# xmllint or Chromium is not installed or cannot start here).
#   AGENT=path  the binary under test (default $BUILD/kvmprof-agent)
#   TAG=prefix  prepended to every test name (e.g. "asan:")
#   CHROMIUM=path  the browser (default: chromium or chromium-browser on PATH)
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
AGENT=${AGENT:-$BUILD/kvmprof-agent}
FIX=$BUILD/agent-fixtures
HOT=split_three_quarters
T=$(mktemp -d "${TMPDIR:-/tmp}/kvmprof-svg-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
# shellcheck source=tests/lib/harness.sh
. tests/lib/harness.sh

for f in "$AGENT" "$FIX/split"; do
	if [ ! -x "$f" ]; then
		fail svg-build "$f missing (make $AGENT agent-fixtures)"
		exit 0
	fi
done

# ---- record and render
"$AGENT" record -q -g -o "$T/split.data" -- "$FIX/split" 300000 >/dev/null 2>"$T/record.err"
rc=$?
"$AGENT" report -i "$T/split.data" --format svg -o "$T/split.svg" 2>"$T/report.err"
rrc=$?
if [ $rc -ne 0 ] || [ $rrc -ne 0 ] || ! sanitizer_clean "$T/record.err" || ! sanitizer_clean "$T/report.err"; then
	fail svg-report "record exited $rc, report --format svg $rrc" "$T/report.err"
	exit 0
fi
# The hot function's own frame: its tooltip, and its box.
frame=$(grep -m 1 "<g class=\"f\" data-n=\"$HOT\">" "$T/split.svg")
if [ -z "$frame" ] || ! grep -q '^<svg ' "$T/split.svg" || [ "$(tail -n 1 "$T/split.svg")" != '</svg>' ]; then
	fail svg-report "no frame for $HOT, or not a whole <svg> document" "$T/split.svg"
	exit 0
fi
pass "svg-report ($(wc -c <"$T/split.svg") bytes)"

# ---- well-formed XML
if ! command -v xmllint >/dev/null; then
	skip svg-well-formed "xmllint not installed (apt-get install libxml2-utils)"
elif xmllint --noout "$T/split.svg" 2>"$T/xmllint.err"; then
	pass svg-well-formed
else
	fail svg-well-formed "xmllint rejects it" "$T/xmllint.err"
fi

# ---- headless Chromium
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
	skip svg-chromium "chromium not installed (apt-get install chromium)"
	exit 0
fi
width=$(sed -n 's/^<svg [^>]* width="\([0-9]*\)" height="\([0-9]*\)".*/\1/p' "$T/split.svg")
height=$(sed -n 's/^<svg [^>]* width="\([0-9]*\)" height="\([0-9]*\)".*/\2/p' "$T/split.svg")
# As root Chromium needs --no-sandbox; its own profile directory keeps it off $HOME.
chrome() {
	timeout 60 "$CHROMIUM" --headless --disable-gpu --no-sandbox --no-first-run --hide-scrollbars \
		--user-data-dir="$T/profile" --force-device-scale-factor=1 "$@" "file://$(realpath "$T/split.svg")"
}

chrome --dump-dom >"$T/dom.html" 2>"$T/chromium.err"
rc=$?
if [ $rc -ne 0 ] && [ ! -s "$T/dom.html" ]; then
	skip svg-chromium "chromium exited $rc without output: it cannot run here ($(grep -m 1 -v dbus "$T/chromium.err"))"
	exit 0
fi
# Chromium shows an XML error page (a <parsererror>) instead of a document it cannot parse.
if grep -q -i 'parsererror\|This page contains the following errors' "$T/dom.html"; then
	fail svg-chromium-dom "chromium could not parse the SVG" "$T/dom.html"
elif grep -q "<text [^>]*>$HOT</text>" "$T/dom.html"; then
	pass "svg-chromium-dom ($HOT labelled)"
else
	fail svg-chromium-dom "no <text> element with $HOT in the DOM chromium built" "$T/dom.html"
fi

chrome --screenshot="$T/shot.png" --window-size="$width,$height" >/dev/null 2>>"$T/chromium.err"
rc=$?
if [ ! -s "$T/shot.png" ]; then
	fail svg-chromium-render "chromium exited $rc and wrote no screenshot" "$T/chromium.err"
	exit 0
fi
# The centre of the hot function's box must be painted in its fill colour
# (a blank or unstyled page has no such pixel). Decoding the PNG needs
# python3; without it a screenshot that small is taken for blank.
if ! command -v python3 >/dev/null; then
	size=$(stat -c %s "$T/shot.png")
	if [ "$size" -gt 4000 ]; then
		pass "svg-chromium-render ($size-byte screenshot; no python3 to check pixels)"
	else
		fail svg-chromium-render "screenshot only $size bytes: blank?"
	fi
	exit 0
fi
read -r x y w h fill < <(sed -n 's/.*<rect x="\([0-9.]*\)" y="\([0-9.]*\)" width="\([0-9.]*\)" height="\([0-9]*\)" fill="rgb(\([0-9,]*\))".*/\1 \2 \3 \4 \5/p' <<<"$frame")
if out=$(python3 - "$T/shot.png" "$x" "$y" "$w" "$h" "$fill" <<'PY' 2>&1
import struct, sys, zlib

path, x, y, w, h, fill = sys.argv[1:]
want = [int(c) for c in fill.split(",")]
data = open(path, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, hdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        hdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
width, height, depth, ctype, _, _, interlace = hdr
assert depth == 8 and ctype in (2, 6) and not interlace, "unexpected PNG format %r" % (hdr,)
bpp = 3 if ctype == 2 else 4
raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
for r in range(height):
    f, line = raw[r * (stride + 1)], bytearray(raw[r * (stride + 1) + 1:(r + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line)
    prev = line
colours = {bytes(row[i:i + 3]) for row in rows[::4] for i in range(0, stride, bpp * 4)}
assert len(colours) >= 4, "screenshot is blank (%d colours)" % len(colours)
cx, cy = int(float(x) + float(w) / 2), int(float(y) + float(h) / 2)
got = list(rows[cy][cx * bpp:cx * bpp + 3])
assert all(abs(g - e) <= 12 for g, e in zip(got, want)), "pixel (%d,%d) is %r, the box's fill is %r" % (cx, cy, got, want)
print("%dx%d, %d colours, box centre (%d,%d) rgb%r" % (width, height, len(colours), cx, cy, tuple(got)))
PY
); then
	pass "svg-chromium-render ($out)"
else
	fail svg-chromium-render "the screenshot does not show the flame graph: $(tail -n 1 <<<"$out")"
fi
