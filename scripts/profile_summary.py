#!/usr/bin/env python3
"""Where a request's guest time goes, over the profiles scripts/profile.sh wrote.

    scripts/profile_summary.py [--top N] PROFILE.json...

Reads Viceroy's guest profiles (the Firefox Profiler's processed format: one thread, each
sample a stack) and prints, over all the files' samples together:

* the share of samples in each part of a request (a sample counts for a part when any frame
  of its stack belongs to it, so the parts can overlap and need not sum to 100 %);
* the N functions with the most samples of their own (leaf frames), and the N of ours
  (trusted_server_*) with the most samples inclusive.

How to read it: the guest is sampled at the points where wasm code checks its epoch (function
entries, loops). A host call (the cache lookup, sending the origin request, writing to the
client or the log) runs outside wasm, so its time is counted at the first check after it
returns: usually in the function that made the call or the next one it enters, often
`malloc` or `free`. A small request gives few samples: profile twenty or more and read the
shares, not single functions.
"""

import argparse
import collections
import json
import re
import sys

# Each part of a request and the frames that belong to it (regular expressions on the
# demangled function name, hash suffix removed).
PARTS = [
    ("set-up (logger, request, access record)",
     r"kit::access::init_logging|kit::logger::init|log_fastly::Builder|Request::from_client"
     r"|kit::access::Access::start"),
    ("consent decision and geolocation",
     r"phases::consent|trusted_server_core::consent|kit::geo|geo_lookup"),
    ("edge ID (facts, key, HMAC)",
     r"phases::identity|publisher::identity|hmac|sha2::"),
    ("routing", r"RouteTable|trusted_server_core::routes"),
    ("cache lookup and store", r"phases::cache|fastly::cache"),
    ("origin request (build, backend, send, wait)", r"phases::origin|BackendBuilder"),
    ("response headers", r"phases::response|phases::inject|kit::leaving|kit::reply"),
    ("body pipeline (construction and rewriting)",
     r"phases::body|trusted_server_core::(body|page|stages|url_rewrite)|lol_html"),
    ("writes to the client", r"send_to_client|StreamingBody|streaming_body"),
    ("access line and log writes",
     r"Access::log|Access::line|EndpointLogger as log::Log|log_fastly::Logger as log::Log"),
    ("allocation (malloc, free, and host time counted there)",
     r"^(malloc|free|calloc|realloc|dlmalloc|dlfree|dlrealloc)$"),
]


def demangled(name):
    return re.sub(r"::h[0-9a-f]{16}$", "", name)


def stacks(path):
    """Each sample's stack of function names, leaf first."""
    profile = json.load(open(path))
    for thread in profile["threads"]:
        strings = thread["stringArray"]
        stack_table, frames, funcs = thread["stackTable"], thread["frameTable"], thread["funcTable"]
        names = [demangled(strings[funcs["name"][f]]) for f in frames["func"]]
        samples = thread["samples"]
        weights = samples.get("weight") or [1] * samples["length"]
        for stack, weight in zip(samples["stack"], weights):
            chain = []
            while stack is not None:
                chain.append(names[stack_table["frame"][stack]])
                stack = stack_table["prefix"][stack]
            if chain:
                yield chain, weight or 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("profiles", nargs="+")
    args = parser.parse_args()
    parts = [(label, re.compile(pattern)) for label, pattern in PARTS]
    total = 0
    in_part = collections.Counter()
    own = collections.Counter()
    inclusive = collections.Counter()
    for path in args.profiles:
        for chain, weight in stacks(path):
            total += weight
            own[chain[0]] += weight
            for name in set(chain):
                if name.startswith("trusted_server"):
                    inclusive[name] += weight
            for label, pattern in parts:
                if any(pattern.search(name) for name in chain):
                    in_part[label] += weight
    if total == 0:
        sys.exit("no samples in " + " ".join(args.profiles))
    share = lambda n: f"{100 * n / total:5.1f} %"
    print(f"{total} samples over {len(args.profiles)} profile(s)")
    print("\nparts of the request (overlapping):")
    for label, _ in parts:
        print(f"  {share(in_part[label])}  {label}")
    print(f"\nthe {args.top} functions with the most samples of their own:")
    for name, n in own.most_common(args.top):
        print(f"  {share(n)}  {name[:110]}")
    print(f"\nours, inclusive (top {args.top}):")
    for name, n in inclusive.most_common(args.top):
        print(f"  {share(n)}  {name[:110]}")


if __name__ == "__main__":
    main()
