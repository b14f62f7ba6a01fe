"""Community IDs of the conn events of Zeek logs, computed by the reference implementation
(Python's `communityid`, `pip install communityid`), for tests/it/community_id.rs.

Usage: community_ids.py ZEEKREF_DIR SEED FILE...

Reads every file in order (Zeek TSV through ZEEKREF_DIR/zeekref.py, the independent reader;
Zeek JSON lines with `"_path": "conn"`, or without `_path` and with conn's fields, directly) and prints, for each conn event, one JSON line
`{"uid": ..., "community_id": ..., "v6": bool, "proto": ...}`; `community_id` is null where
the tuple is incomplete or the protocol has no number. Zeek logs ICMPv6 as `icmp`: between
IPv6 addresses it is protocol 58, as Zeek's own community-id package maps it.
"""

import gzip
import ipaddress
import json
import sys

import communityid

CONN_FIELDS = {"conn_state", "history", "orig_bytes", "resp_bytes", "duration"}
PROTOS = {"tcp": communityid.PROTO_TCP, "udp": communityid.PROTO_UDP, "sctp": communityid.PROTO_SCTP}


def conn_records(zeekref, path):
    if path.endswith(".json") or path.endswith(".json.gz"):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            for line in f:
                if line.strip():
                    obj = json.loads(line)
                    # A line without `_path` whose file name names no log is read by weir
                    # as the log its fields are (the guide, docs/book/src/import/zeek-json.md): conn's own
                    # fields make it a conn event.
                    if obj.get("_path") == "conn" or (
                        "_path" not in obj and CONN_FIELDS <= obj.keys()
                    ):
                        yield obj
        return
    for log_path, rec, _types in zeekref.records(path):
        if log_path == "conn":
            yield rec


def main(argv):
    sys.path.insert(0, argv[0])
    import zeekref

    cid = communityid.CommunityID(seed=int(argv[1]))
    for path in argv[2:]:
        for rec in conn_records(zeekref, path):
            src, dst = rec.get("id.orig_h"), rec.get("id.resp_h")
            sport, dport = rec.get("id.orig_p"), rec.get("id.resp_p")
            proto = rec.get("proto")
            v6 = src is not None and ipaddress.ip_address(src).version == 6
            number = PROTOS.get(proto)
            if proto == "icmp":
                number = communityid.PROTO_ICMP6 if v6 else communityid.PROTO_ICMP
            value = None
            if None not in (src, dst, sport, dport, number):
                value = cid.calc(communityid.FlowTuple(number, src, dst, sport, dport))
            print(json.dumps({"uid": rec.get("uid"), "community_id": value, "v6": v6, "proto": proto}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
