#!/usr/bin/env python3
"""Doxygen input filter for fovea's public headers.

The headers use plain C comments: a comment before a declaration documents
it, a comment after a member on the same line documents that member, and
the comment at the top of a file describes the file. This filter turns them
into Doxygen's forms (/** */, /**< */, \\file), so the headers carry no
Doxygen markup of their own, and gives each name of 'int h, w; /* doc */'
the comment. Section rules (/* ---- name ---- */) stay plain comments.
The number of lines is kept, so warnings point at the header's own lines.
Usage: doxygen_filter.py HEADER (writes the filtered text to stdout).
"""
import re
import sys

SECTION = re.compile(r"^\s*/\*\s*-{3,}")
PREPROC_NO_DOC = re.compile(r"^\s*#\s*(if|ifdef|ifndef|endif|else|elif|include|undef|pragma)\b")
# 'type a, *b, c[4];' then a trailing comment
MULTI = re.compile(
    r"^(?P<ind>\s*)(?P<type>(?:const\s+)?[A-Za-z_]\w*(?:\s+[A-Za-z_]\w*)*)\s*"
    r"(?P<names>\**\s*\w+(?:\[[^\]]*\])?(?:\s*,\s*\**\s*\w+(?:\[[^\]]*\])?)+)\s*;\s*$")


def find_comment_start(code):
    """Index of a '/*' outside string and char literals, or -1."""
    in_str = None
    i = 0
    while i < len(code) - 1:
        ch = code[i]
        if in_str:
            if ch == "\\":
                i += 2
                continue
            if ch == in_str:
                in_str = None
        elif ch in "\"'":
            in_str = ch
        elif code.startswith("/*", i):
            return i
        elif code.startswith("//", i):
            return -1
        i += 1
    return -1


def distribute(m, block):
    """'T a, b;' and its comment -> 'T a; /**< text */ T b; /**< text */'."""
    text = " ".join(b.strip().lstrip("*").strip() for b in block)
    text = text[2:text.rfind("*/")].lstrip("*<").strip()
    names = [n.strip() for n in m.group("names").split(",")]
    return m.group("ind") + " ".join("%s %s; /**< %s */" % (m.group("type"), n, text) for n in names)


def convert(lines):
    lines = list(lines)
    out = []
    i = 0
    first_done = False
    while i < len(lines):
        line = lines[i]
        start = find_comment_start(line)
        if start < 0:
            if line.strip():
                first_done = True
            out.append(line)
            i += 1
            continue
        # the whole comment: this line's part and the lines up to its end
        j = i
        while lines[j].find("*/", start + 2 if j == i else 0) < 0 and j + 1 < len(lines):
            j += 1
        before, rest = line[:start], line[start:]
        block = [rest] + lines[i + 1:j + 1]
        is_doc = rest.startswith("/**") or rest.startswith("/*!")
        if not first_done and not before.strip():
            first_done = True  # the file's description
            if not is_doc:
                block[0] = "/**" + block[0][2:]
                end = block[-1].rfind("*/")
                block[-1] = block[-1][:end] + "\\file " + block[-1][end:]
        elif is_doc or SECTION.match(line) or PREPROC_NO_DOC.match(line):
            pass
        elif not before.strip():
            m = MULTI.match(lines[j + 1]) if j + 1 < len(lines) else None
            if m:
                # 'int a, b;' under the comment: every name gets it
                lines[j + 1] = distribute(m, block)
            else:
                block[0] = "/**" + block[0][2:]
        else:
            block[0] = "/**<" + block[0][2:]
            m = MULTI.match(before)
            if m:
                # every name gets the comment, all on this line
                block = [distribute(m, block)] + [""] * (len(block) - 1)
                before = ""
        out.append(before + block[0])
        out.extend(block[1:])
        i = j + 1
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        lines = f.read().split("\n")
    sys.stdout.write("\n".join(convert(lines)))


if __name__ == "__main__":
    main()
