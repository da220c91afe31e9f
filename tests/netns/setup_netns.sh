#!/usr/bin/env bash
# Several "hosts" on one machine for `make test-netns`: Linux network namespaces joined by veth pairs to a bridge in a
# namespace of its own. Each host has one address on a private subnet and its own loopback; nothing is added to the
# machine's own (root) namespace, so the roles reach each other only over the veth links.
#
#   setup_netns.sh check                exit 0 if this machine can do it (root, iproute2, network namespaces and veth
#                                       pairs); else print why on stdout and exit 3
#   setup_netns.sh start TAG HOST...    create namespace TAG-HOST for each HOST (addresses 10.231.0.1, .2, ... in
#                                       that order) and the bridge namespace TAG-br; prints HOST=ADDRESS per host.
#                                       On any error it removes what it made.
#   setup_netns.sh cut TAG HOST         take HOST's link down (at the bridge: the host sees nothing, sends nothing)
#   setup_netns.sh restore TAG HOST     bring it back up
#   setup_netns.sh stop TAG             kill the processes still inside TAG-* namespaces and delete them all
#   setup_netns.sh stale                remove the namespaces of earlier runs whose creator process is gone
# TAG is "dingnt<pid>" of the creating process (the test), so `stale` can tell whose namespaces are abandoned.
set -euo pipefail

cmd=${1:-}
SUBNET=10.231.0
ours() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1-" || true; }

stop_tag() {
    local tag=$1 ns pid
    for ns in $(ours "$tag"); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    done
    for ns in $(ours "$tag"); do ip netns del "$ns" 2>/dev/null || true; done
    [[ -z $(ours "$tag") ]]
}

case "$cmd" in
check)
    if [[ $(id -u) != 0 ]]; then echo "not root (creating network namespaces needs root)"; exit 3; fi
    if ! command -v ip >/dev/null; then echo "no 'ip' command (iproute2)"; exit 3; fi
    probe=dingntcheck$$
    trap 'ip netns del ${probe}a 2>/dev/null || true; ip netns del ${probe}b 2>/dev/null || true' EXIT
    if ! err=$(ip netns add "${probe}a" 2>&1 && ip netns add "${probe}b" 2>&1); then
        echo "cannot create a network namespace: $err"; exit 3
    fi
    if ! err=$(ip link add eth0 netns "${probe}a" type veth peer name p0 netns "${probe}b" 2>&1); then
        echo "cannot create a veth pair between namespaces: $err"; exit 3
    fi
    if ! err=$(ip -n "${probe}b" link add br0 type bridge 2>&1); then
        echo "cannot create a bridge inside a namespace: $err"; exit 3
    fi
    ;;
start)
    tag=${2:?start needs a TAG}; shift 2
    (( $# >= 1 )) || { echo "start needs at least one HOST" >&2; exit 2; }
    trap 'stop_tag "$tag" || true' ERR
    br="$tag-br"
    ip netns add "$br"
    ip -n "$br" link set lo up
    ip -n "$br" link add br0 type bridge
    ip -n "$br" link set br0 up
    i=0
    for host in "$@"; do
        i=$((i + 1))
        ns="$tag-$host"
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        ip link add eth0 netns "$ns" type veth peer name "p$host" netns "$br"
        ip -n "$br" link set "p$host" master br0
        ip -n "$br" link set "p$host" up
        ip -n "$ns" addr add "$SUBNET.$i/24" dev eth0
        ip -n "$ns" link set eth0 up
        echo "$host=$SUBNET.$i"
    done
    ;;
cut|restore)
    tag=${2:?$cmd needs a TAG}; host=${3:?$cmd needs a HOST}
    ip -n "$tag-br" link set "p$host" "$([[ $cmd == cut ]] && echo down || echo up)"
    ;;
stop)
    stop_tag "${2:?stop needs a TAG}"
    ;;
stale)
    for tag in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -oE '^dingnt[0-9]+' | sort -u); do
        kill -0 "${tag#dingnt}" 2>/dev/null || stop_tag "$tag" || true
    done
    ;;
*)
    echo "usage: $0 check | start TAG HOST... | cut TAG HOST | restore TAG HOST | stop TAG | stale" >&2
    exit 2
    ;;
esac
