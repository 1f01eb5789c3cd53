#!/usr/bin/env python3
"""Converts an X window dump (xwd -root: TrueColor, ZPixmap, 24 or 32 bits per pixel) to a PNG, cropped.

    xwd_to_png.py IN.xwd OUT.png [WIDTH HEIGHT]

No ImageMagick needed: the desktop presenter's test keeps its screenshot with Python's standard library.
"""
import struct
import sys
import zlib

data = open(sys.argv[1], "rb").read()
(header_size, _version, _format, depth, width, height, _offset, byte_order, _unit, _unit_order, _pad,
 bits_per_pixel, bytes_per_line, _visual, red_mask, green_mask, blue_mask, _bits_rgb, _entries, ncolors,
 _ww, _wh, _wx, _wy, _bw) = struct.unpack(">25I", data[:100])
if bits_per_pixel not in (24, 32):
    sys.exit(f"xwd_to_png: {bits_per_pixel} bits per pixel is not handled (24 or 32 only)")
size = bits_per_pixel // 8
pixels = data[header_size + ncolors * 12:]
crop_w = min(width, int(sys.argv[3])) if len(sys.argv) > 3 else width
crop_h = min(height, int(sys.argv[4])) if len(sys.argv) > 4 else height
little = byte_order == 0


def shift(mask):
    return (mask & -mask).bit_length() - 1


rs, gs, bs = shift(red_mask), shift(green_mask), shift(blue_mask)
rows = bytearray()
for y in range(crop_h):
    rows.append(0)
    line = pixels[y * bytes_per_line: y * bytes_per_line + width * size]
    for x in range(crop_w):
        value = int.from_bytes(line[x * size: x * size + size], "little" if little else "big")
        rows += bytes(((value & red_mask) >> rs, (value & green_mask) >> gs, (value & blue_mask) >> bs))


def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", crop_w, crop_h, 8, 2, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b"")
open(sys.argv[2], "wb").write(png)
