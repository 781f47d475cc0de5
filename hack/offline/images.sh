#!/usr/bin/env bash
# images.sh: local images from static binaries or Debian packages, and
# loading them into a kind cluster's nodes, with no registry.
#
# Usage:
#   images.sh nginx [CLUSTER]           meshbench/nginx:<Debian nginx version>
#                                       (prints the tag; loads it when CLUSTER is given)
#   images.sh go TAG PKG [CLUSTER]      builds the Go main package PKG (a path in
#                                       this repository, e.g. ./cmd/x, or module/pkg@version)
#                                       statically and makes TAG from it
#   images.sh mbnodecpu [CLUSTER]       meshbench/mbnodecpu:dev (MBNODECPU_IMAGE overrides
#                                       the tag), the node CPU agent from ./cmd/mbnodecpu
#   images.sh binary TAG FILE [PATH]    a static binary FILE as TAG, at PATH
#                                       in the image (default /usr/local/bin/<name>)
#   images.sh debian TAG PKG[,PKG...] [ENTRYPOINT...]
#                                       a Debian minbase rootfs with PKGs as TAG
#   images.sh load CLUSTER TAG...       loads local images into every node of
#                                       the kind cluster CLUSTER
#
# Sourced (as node-image.sh does), it only defines the functions.
set -euo pipefail
if [ -z "${OFFLINE_DIR:-}" ]; then
	source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
fi

IMAGE_PATH_ENV='ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

# image_label TAG: the image's meshbench.cache-key label, or nothing.
image_label() {
	docker image inspect -f '{{ index .Config.Labels "meshbench.cache-key" }}' "$1" 2>/dev/null || true
}

# image_id TAG: the image ID of TAG, or nothing.
image_id() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true; }

# drop_replaced OLD_ID TAG: removes the image OLD_ID that TAG named before a
# rebuild, unless TAG still names it or something else uses it.
drop_replaced() {
	local old="$1" tag="$2"
	[ -n "${old}" ] && [ "${old}" != "$(image_id "${tag}")" ] || return 0
	docker rmi "${old}" >/dev/null 2>&1 || true
}

# image_from_dir TAG DIR [docker import flags...]: DIR as the single layer of TAG.
image_from_dir() {
	local tag="$1" dir="$2" old
	shift 2
	old=$(image_id "${tag}")
	tar --numeric-owner --xattrs -C "${dir}" -c . | docker import --change "${IMAGE_PATH_ENV}" "$@" - "${tag}" >/dev/null
	drop_replaced "${old}" "${tag}"
	log "image ${tag}: $(docker image inspect -f '{{.Size}}' "${tag}" | numfmt --to=iec)"
}

# minimal_root DIR: what a static binary may expect (the files of a
# "distroless static" image): users, CA certificates, /tmp.
minimal_root() {
	local d="$1"
	install -d -m 0755 "${d}/etc/ssl/certs" "${d}/usr/local/bin" "${d}/var/run"
	install -d -m 1777 "${d}/tmp"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"${d}/etc/passwd"
	printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"${d}/etc/group"
	printf 'hosts: files dns\n' >"${d}/etc/nsswitch.conf"
	if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
		cp /etc/ssl/certs/ca-certificates.crt "${d}/etc/ssl/certs/"
	fi
}

# is_static FILE: FILE has no ELF interpreter.
is_static() { ! readelf -l "$1" 2>/dev/null | grep -q 'Requesting program interpreter'; }

# image_from_static_binary TAG FILE PATH [EXTRA_FILE...]: FILE at PATH in a
# minimal root, as the entrypoint; EXTRA_FILEs go next to it.
image_from_static_binary() {
	local tag="$1" file="$2" path="$3" dir f
	shift 3
	is_static "${file}" || die "${file} is not a static binary"
	dir=$(mktemp -d)
	minimal_root "${dir}"
	install -D -m 0755 "${file}" "${dir}${path}"
	for f in "$@"; do
		is_static "${f}" || die "${f} is not a static binary"
		install -m 0755 "${f}" "${dir}$(dirname "${path}")/"
	done
	image_from_dir "${tag}" "${dir}" --change "ENTRYPOINT [\"${path}\"]"
	rm -rf "${dir}"
}

# image_archive TAG FILE CMD...: runs CMD (which makes the image TAG) and
# saves TAG to FILE, unless FILE was saved before from the same command.
image_archive() {
	local tag="$1" file="$2" key
	shift 2
	key="$(sha256sum "${OFFLINE_DIR}/versions.env" | cut -c1-16) $*"
	if [ -f "${file}" ] && stamp_ok "${file}.stamp" "${key}"; then
		log "image archive ${file}: cached"
		return 0
	fi
	"$@"
	mkdir -p "$(dirname "${file}")"
	docker save "${tag}" -o "${file}"
	echo "${key}" >"${file}.stamp"
}

# debian_rootfs NAME PKGS: prints the path of a cached Debian minbase rootfs
# with the comma-separated packages PKGS (made with debootstrap on first use).
debian_rootfs() {
	local name="$1" pkgs="$2" key dir
	key="${DEBIAN_SUITE} ${pkgs}"
	dir="${MESHBENCH_CACHE}/rootfs/${name}-${DEBIAN_SUITE}-$(echo "${key}" | sha256sum | cut -c1-12)"
	if stamp_ok "${dir}.stamp" "${key}"; then
		echo "${dir}"
		return 0
	fi
	apt_install debootstrap
	rm -rf "${dir}"
	mkdir -p "$(dirname "${dir}")"
	local mirror logf="${dir}.debootstrap.log"
	mirror=$(debian_mirror)
	log "debootstrap ${name} (${DEBIAN_SUITE}, minbase + ${pkgs}), log ${logf}"
	# dpkg in the new root without an fsync per file, as Docker's old
	# mkimage.sh set it up (kube-proxy's root, alone, one run each on
	# 2026-12-05: 39.8 s against 43.7):
	# a root that a crash leaves half written has no stamp and is made
	# again. Not kept in the image.
	local speedup="${dir}/etc/dpkg/dpkg.cfg.d/meshbench-unsafe-io"
	mkdir -p "$(dirname "${speedup}")"
	echo force-unsafe-io >"${speedup}"
	if ! ${NICE} debootstrap --variant=minbase --include="${pkgs}" "${DEBIAN_SUITE}" "${dir}" "${mirror}" >"${logf}" 2>&1; then
		tail -n 20 "${logf}" >&2
		die "debootstrap ${name} failed"
	fi
	# no package lists or caches in images
	rm -rf "${speedup}" "${dir}"/var/lib/apt/lists/* "${dir}"/var/cache/apt/*.bin "${dir}"/var/cache/apt/archives/*.deb \
		"${dir}"/var/log/* "${dir}"/tmp/*
	echo "${key}" >"${dir}.stamp"
	echo "${dir}"
}

# debian_image TAG PKGS [ENTRYPOINT...]: a Debian minbase image with PKGS.
debian_image() {
	local tag="$1" pkgs="$2" root ep=""
	shift 2
	root=$(debian_rootfs "$(echo "${tag}" | tr '/:' '__')" "${pkgs}")
	[ -d "${root}/usr" ] || die "no rootfs at '${root}'"
	if [ "$#" -gt 0 ]; then
		ep=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
		image_from_dir "${tag}" "${root}" --change "ENTRYPOINT ${ep}"
	else
		image_from_dir "${tag}" "${root}"
	fi
}

# nginx_image: builds meshbench/nginx:<Debian nginx version> from Debian
# ${NGINX_SUITE} (versions.env: the kind sidecar's pin) and prints the tag.
# nginx runs in the foreground as the entrypoint; its logs go to the
# container's stdout and stderr, as in the upstream nginx image.
nginx_image() {
	local root ver tag dir
	root=$(DEBIAN_SUITE="${NGINX_SUITE}" debian_rootfs nginx nginx)
	[ -d "${root}/usr" ] || die "no nginx rootfs at '${root}'"
	# shellcheck disable=SC2016 # dpkg-query's own ${Version}
	ver=$(chroot "${root}" dpkg-query -W -f='${Version}' nginx)
	tag="meshbench/nginx:$(echo "${ver}" | tr '+~:' '---')"
	local key
	key="$(echo "${root} ${ver}" | sha256sum | cut -c1-16)"
	if [ "$(image_label "${tag}")" = "${key}" ]; then
		log "image ${tag}: current"
		echo "${tag}"
		return 0
	fi
	dir=$(mktemp -d "${MESHBENCH_CACHE}/tmp.XXXXXX")
	cp -a "${root}/." "${dir}/"
	mkdir -p "${dir}/var/log/nginx"
	ln -sf /dev/stdout "${dir}/var/log/nginx/access.log"
	ln -sf /dev/stderr "${dir}/var/log/nginx/error.log"
	image_from_dir "${tag}" "${dir}" \
		--change "LABEL meshbench.cache-key=${key}" \
		--change 'EXPOSE 80' \
		--change 'ENTRYPOINT ["/usr/sbin/nginx", "-g", "daemon off;"]'
	rm -rf "${dir}"
	echo "${tag}"
}

# go_image TAG PKG: builds the Go main package PKG statically (a package of
# this repository, or module/path@version from the module proxy) and makes TAG.
go_image() {
	local tag="$1" pkg="$2" dir name
	dir=$(mktemp -d)
	name=$(basename "${pkg%@*}")
	if [[ "${pkg}" == *@* ]]; then
		(cd "${dir}" && CGO_ENABLED=0 GOFLAGS=-mod=mod GOBIN="${dir}" ${NICE} go install -trimpath "${GO_NO_DWARF}" -ldflags='-s -w' "${pkg}")
	else
		(cd "${REPO_ROOT}" && CGO_ENABLED=0 ${NICE} go build -trimpath "${GO_NO_DWARF}" -ldflags='-s -w' -o "${dir}/${name}" "${pkg}")
	fi
	image_from_static_binary "${tag}" "${dir}/${name}" "/usr/local/bin/${name}"
	rm -rf "${dir}"
}

# kind_nodes CLUSTER: the node containers of the kind cluster CLUSTER.
kind_nodes() {
	docker ps --filter "label=io.x-k8s.kind.cluster=$1" --format '{{.Names}}'
}

# load_images CLUSTER TAG...: imports the local images TAG... into the
# containerd of every node of CLUSTER (what `kind load docker-image` does).
load_images() {
	local cluster="$1" node nodes archive
	shift
	nodes=$(kind_nodes "${cluster}")
	[ -n "${nodes}" ] || die "no nodes for kind cluster ${cluster}"
	archive=$(mktemp "${TMPDIR:-/tmp}/meshbench-images.XXXXXX")
	docker save "$@" -o "${archive}"
	for node in ${nodes}; do
		if ! docker exec -i "${node}" ctr --namespace=k8s.io images import --all-platforms --digests \
			--snapshotter=overlayfs - <"${archive}" >/dev/null 2>&1; then
			rm -f "${archive}"
			die "could not load $* into ${node}"
		fi
		log "loaded $* into ${node}"
	done
	rm -f "${archive}"
}

images_main() {
	local cmd="${1:-}"
	shift || true
	case "${cmd}" in
	nginx)
		local tag
		tag=$(timed nginx-image nginx_image)
		echo "${tag}"
		[ "$#" = 0 ] || timed load-nginx load_images "$1" "${tag}"
		;;
	go)
		[ "$#" -ge 2 ] || die "usage: images.sh go TAG PKG [CLUSTER]"
		timed "go-image-$(basename "$2")" go_image "$1" "$2"
		[ "$#" -lt 3 ] || timed load-image load_images "$3" "$1"
		;;
	mbnodecpu)
		local tag="${MBNODECPU_IMAGE:-meshbench/mbnodecpu:dev}"
		timed go-image-mbnodecpu go_image "${tag}" ./cmd/mbnodecpu
		echo "${tag}"
		[ "$#" = 0 ] || timed load-image load_images "$1" "${tag}"
		;;
	binary)
		[ "$#" -ge 2 ] || die "usage: images.sh binary TAG FILE [PATH]"
		image_from_static_binary "$1" "$2" "${3:-/usr/local/bin/$(basename "$2")}"
		;;
	debian)
		[ "$#" -ge 2 ] || die "usage: images.sh debian TAG PKG[,PKG...] [ENTRYPOINT...]"
		timed debian-image debian_image "$@"
		;;
	load)
		[ "$#" -ge 2 ] || die "usage: images.sh load CLUSTER TAG..."
		timed load-images load_images "$@"
		;;
	*)
		sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	images_main "$@"
fi
