#!/usr/bin/env python3
"""Runs what README.md tells a newcomer to run, so the front page stays true.

- Every relative link in README.md names a file or folder that exists.
- The first ```c block is compiled against this build's libfovea and run on
  the CPU backend; it must print the sum it promises (45).
- Every line of every ```sh block is a command, handled by a rule below:
    toolchain/demo.sh  its steps are checked, then its last step (fovea-edge
                       with no arguments) runs as on a headless machine
                       without a GPU: it must write edges.mp4 or PNG frames;
    toolchain/test.sh  its steps are checked; it is not run from here (it
                       runs this test: CI runs it as its first step);
    build/...          run from a scratch folder in which build/, data/ and
                       tests/ point into this build and source tree; must
                       exit 0; a file:// or --output file it names must exist
                       (of a numbered name, out_%02d.png, the first).
  Commands that need a GPU, a camera or a display are skipped with the
  reason; a command no rule knows fails the test (add a rule).
Usage: test_readme.py --source SRC --build BUILD --cc CC --libdir DIR_OF_LIBFOVEA [--cflags=F]
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def blocks(text, lang):
    return re.findall(r"^```%s\n(.*?)^```" % re.escape(lang), text, re.S | re.M)


def commands(text):
    out = []
    for block in blocks(text, "sh"):
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def run(argv, cwd, env=None, timeout=240):
    print("$ " + " ".join(shlex.quote(a) for a in argv), flush=True)
    p = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=timeout, universal_newlines=True)
    tail = "\n".join(p.stdout.splitlines()[-6:])
    print(tail)
    return p.returncode, p.stdout


def headless_env():
    env = dict(os.environ)
    for k in ("DISPLAY", "WAYLAND_DISPLAY"):
        env.pop(k, None)
    env["CUDA_VISIBLE_DEVICES"] = ""  # the non-GPU path, also on a GPU machine
    return env


def check_script(src, path, must_have):
    script = os.path.join(src, path)
    if not os.access(script, os.X_OK):
        fail("%s: missing or not executable" % path)
        return None
    rc, out = run(["bash", "-n", script], src)
    if rc != 0:
        fail("%s: bash -n: %s" % (path, out))
    text = open(script).read()
    for what in must_have:
        if what not in text:
            fail("%s no longer does what README.md says: no '%s'" % (path, what))
    return text


def check_links(src, readme):
    for target in sorted(set(re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme))):
        if re.match(r"[a-z]+://", target):
            continue
        if not os.path.exists(os.path.join(src, target)):
            fail("README.md links to %s, which does not exist" % target)


def check_c_example(src, build, cc, libdir, cflags, readme, scratch):
    cs = blocks(readme, "c")
    if not cs:
        fail("README.md has no ```c block")
        return
    main_c = os.path.join(scratch, "readme_example.c")
    with open(main_c, "w") as f:
        f.write(cs[0])
    exe = os.path.join(scratch, "readme_example")
    rc, out = run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror"] + cflags.split() + [main_c,
                   "-I" + os.path.join(src, "sdk", "include"),
                   "-I" + os.path.join(build, "sdk", "include"),
                   "-L" + libdir, "-Wl,-rpath," + libdir, "-lfovea", "-lm", "-o", exe], scratch)
    if rc != 0:
        fail("README's C example does not compile against libfovea:\n" + out)
        return
    rc, out = run([exe], scratch, env=headless_env(), timeout=60)
    if rc != 0 or "sum around (1,1): 45 (expected 45)" not in out:
        fail("README's C example: exit %d, output %r (expected the sum 45)" % (rc, out))


def skip_reason(cmd):
    if re.search(r"v4l2://|csi://", cmd):
        return "needs a camera"
    if "display://" in cmd:
        return "needs a display"
    if re.search(r"--backend cuda|--autotune|fovea-calibrate", cmd):
        return "needs a GPU"
    return None


def output_files(argv):
    files = []
    for i, a in enumerate(argv):
        if a.startswith("file://") and i > 0 and not argv[i - 1].startswith("--input"):
            files.append(a[len("file://"):])
        if i > 0 and argv[i - 1] == "--output":
            files.append(a)
    # the last file:// argument is the output (an input comes first)
    uris = [a for a in argv if a.startswith("file://")]
    return files if len(uris) <= 1 else [uris[-1][len("file://"):]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--libdir", required=True)
    ap.add_argument("--cflags", default="", help="e.g. the sanitizer libfovea was built with")
    a = ap.parse_args()
    src, build = os.path.abspath(a.source), os.path.abspath(a.build)
    readme = open(os.path.join(src, "README.md")).read()

    check_links(src, readme)
    with tempfile.TemporaryDirectory(prefix="fv-readme-") as scratch:
        check_c_example(src, build, a.cc, os.path.abspath(a.libdir), a.cflags, readme, scratch)
        work = os.path.join(scratch, "work")
        os.mkdir(work)
        os.symlink(build, os.path.join(work, "build"))
        for d in ("data", "tests", "docs"):
            os.symlink(os.path.join(src, d), os.path.join(work, d))
        cmds = commands(readme)
        for cmd in ("toolchain/demo.sh", "toolchain/test.sh"):
            if cmd not in cmds:
                fail("README.md lost its set-up command '%s'" % cmd)
        for cmd in cmds:
            argv = shlex.split(cmd)
            reason = skip_reason(cmd)
            if reason:
                print("SKIP (%s): %s" % (reason, cmd))
            elif argv == ["toolchain/demo.sh"]:
                check_script(src, "toolchain/demo.sh",
                             ["install-deps.sh", 'cmake -S "$root" -B "$root/build"',
                              'cmake --build "$root/build"',
                              '"$root/build/apps/fovea-edge/fovea-edge" "$@"'])
                demo = os.path.join(scratch, "demo")
                os.mkdir(demo)
                rc, out = run([os.path.join(build, "apps", "fovea-edge", "fovea-edge")], demo,
                              env=headless_env())
                made = sorted(f for f in os.listdir(demo)
                              if os.path.getsize(os.path.join(demo, f)) > 0)
                ok = "edges.mp4" in made or "edges_0000.png" in made
                if rc != 0 or not ok:
                    fail("demo (fovea-edge, no arguments, headless, no GPU): exit %d, wrote %s"
                         % (rc, made))
                elif not re.search(r"edges(\.mp4|_%04d\.png|_0000\.png)", out):
                    fail("demo did not say where it wrote the edges")
            elif argv == ["toolchain/test.sh"]:
                check_script(src, "toolchain/test.sh",
                             ["install-deps.sh", "-DFV_WERROR=ON", "cmake --build",
                              "ctest", "-L unit"])
                print("SKIP (runs this test; CI runs it first): toolchain/test.sh")
            elif argv[0].startswith("build/"):
                exe = os.path.join(work, argv[0])
                if not os.access(exe, os.X_OK):
                    fail("%s: not built here (is the program's name still right?)" % argv[0])
                    continue
                rc, out = run([exe] + argv[1:], work, env=headless_env())
                if rc != 0:
                    fail("'%s' exited %d" % (cmd, rc))
                for f in output_files(argv):
                    if "%" in f:  # a numbered sequence: its first file
                        f = f % 0
                    if not os.path.isfile(os.path.join(work, f)):
                        fail("'%s' did not write %s" % (cmd, f))
            else:
                fail("no rule for the README command '%s' (add one to %s)" % (cmd, __file__))
    if failures:
        print("%d README check(s) failed" % len(failures))
        return 1
    print("README.md: links, C example and commands checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
