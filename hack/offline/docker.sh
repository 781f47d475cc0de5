#!/usr/bin/env bash
# docker.sh: make sure a working Docker engine runs on this host.
#
# - installs Debian's docker.io when dockerd is missing;
# - when the host's capability bounding set lacks capabilities Docker grants
#   to privileged containers (CAP_SYS_RESOURCE on our CI VMs), installs the
#   runcwrap runc wrapper and makes it dockerd's default runtime;
# - starts dockerd in the background (log: ${MESHBENCH_CACHE}/dockerd.log)
#   when no engine answers, and waits for `docker info`;
# - checks that a privileged container starts.
#
# Idempotent: a second run only checks. Usage: hack/offline/docker.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

WRAPPER=/usr/local/libexec/meshbench/runc
RUNTIME_NAME=meshbench-runc
DAEMON_JSON=/etc/docker/daemon.json

# host_lacks_caps: true when the bounding set misses a capability the kernel has.
host_lacks_caps() {
	local bnd last full
	bnd=$(awk '/^CapBnd:/{print $2}' /proc/self/status)
	last=$(cat /proc/sys/kernel/cap_last_cap)
	full=$(((1 << (last + 1)) - 1))
	[ $((0x${bnd} & full)) != "${full}" ]
}

install_docker() {
	if command -v dockerd >/dev/null 2>&1; then
		log "dockerd present: $(command -v dockerd)"
		return 0
	fi
	# Keep package scripts from trying to start services (no init system here).
	local policy=/usr/sbin/policy-rc.d created=""
	if [ ! -e "${policy}" ]; then
		printf '#!/bin/sh\nexit 101\n' >"${policy}"
		chmod +x "${policy}"
		created=1
	fi
	apt_install docker.io
	[ -z "${created}" ] || rm -f "${policy}"
}

install_wrapper() {
	local key
	key="runcwrap $(sha256sum "${OFFLINE_DIR}/runcwrap/main.go" | cut -c1-16) $(go env GOVERSION)"
	if [ -x "${WRAPPER}" ] && stamp_ok "${WRAPPER}.stamp" "${key}"; then
		log "runc wrapper up to date: ${WRAPPER}"
	else
		mkdir -p "$(dirname "${WRAPPER}")"
		(cd "${REPO_ROOT}" && CGO_ENABLED=0 go build -trimpath -o "${WRAPPER}.new" ./hack/offline/runcwrap)
		mv "${WRAPPER}.new" "${WRAPPER}"
		echo "${key}" >"${WRAPPER}.stamp"
		log "installed runc wrapper: ${WRAPPER}"
	fi
	# Merge the runtime into daemon.json, keeping any other settings.
	mkdir -p "$(dirname "${DAEMON_JSON}")"
	local current='{}' wanted
	[ -s "${DAEMON_JSON}" ] && current=$(cat "${DAEMON_JSON}")
	wanted=$(jq --arg n "${RUNTIME_NAME}" --arg p "${WRAPPER}" \
		'.runtimes[$n] = {path: $p} | ."default-runtime" = $n' <<<"${current}")
	if [ "$(jq -S . <<<"${current}")" != "$(jq -S . <<<"${wanted}")" ]; then
		echo "${wanted}" >"${DAEMON_JSON}"
		log "configured ${RUNTIME_NAME} as default runtime in ${DAEMON_JSON}"
		DAEMON_CONFIG_CHANGED=1
	fi
}

# docker_ok: an engine answers.
docker_ok() { docker info >/dev/null 2>&1; }

start_dockerd() {
	if docker_ok; then
		if [ -n "${DAEMON_CONFIG_CHANGED:-}" ]; then
			# dockerd reloads runtimes on SIGHUP; default-runtime too.
			local pid
			pid=$(cat /var/run/docker.pid 2>/dev/null || true)
			[ -n "${pid}" ] || die "dockerd runs but /var/run/docker.pid is missing; restart it to apply ${DAEMON_JSON}"
			kill -HUP "${pid}"
			log "reloaded dockerd (pid ${pid})"
		fi
		return 0
	fi
	mkdir -p "${MESHBENCH_CACHE}"
	local logf="${MESHBENCH_CACHE}/dockerd.log"
	log "starting dockerd (log: ${logf})"
	# setsid: the daemon outlives this script and its terminal.
	setsid nohup dockerd >>"${logf}" 2>&1 </dev/null &
	for _ in $(seq 1 60); do
		docker_ok && return 0
		sleep 1
	done
	tail -n 30 "${logf}" >&2
	die "dockerd did not answer within 60s"
}

# check_privileged: a privileged container from a locally made one-file
# image (a static "exit 0" program) starts and exits 0: the case that runc
# fails on hosts without the wrapper.
check_privileged() {
	local img=meshbench/offline-check:1 dir
	if ! docker image inspect "${img}" >/dev/null 2>&1; then
		dir=$(mktemp -d)
		printf 'int main(void) { return 0; }\n' >"${dir}/true.c"
		gcc -static -Os -o "${dir}/true" "${dir}/true.c"
		tar -C "${dir}" -c true | docker import --change 'ENTRYPOINT ["/true"]' - "${img}" >/dev/null
		rm -rf "${dir}"
	fi
	if ! docker run --rm --privileged --network none "${img}" >/dev/null 2>&1; then
		docker run --rm --privileged --network none "${img}" || true
		die "a privileged container fails to start; see ${MESHBENCH_CACHE}/dockerd.log"
	fi
	log "privileged containers start"
}

# raise_inotify: kind's advice for several clusters on one host (each
# node's systemd and kubelet hold inotify instances; 128 runs out at about
# two 4-node clusters, and new nodes then die at start).
raise_inotify() {
	local kv key want cur
	for kv in fs.inotify.max_user_instances=512 fs.inotify.max_user_watches=524288; do
		key=${kv%=*} want=${kv#*=}
		cur=$(sysctl -n "${key}")
		if [ "${cur}" -lt "${want}" ]; then
			sysctl -qw "${kv}"
			log "${key}: ${cur} → ${want}"
		fi
	done
}

main() {
	raise_inotify
	timed docker-install install_docker
	if host_lacks_caps; then
		log "host capability bounding set is incomplete: using the runc wrapper"
		timed docker-runc-wrapper install_wrapper
	else
		log "host capability bounding set is complete: no runc wrapper needed"
	fi
	timed docker-start start_dockerd
	timed docker-check check_privileged
	docker version --format 'docker client {{.Client.Version}}, server {{.Server.Version}}' >&2
}

main "$@"
