#!/usr/bin/env bash
# cilium.sh: the Cilium agent and operator images, built from the Go module
# proxy and Debian alone (no registry), the way images/cilium/Dockerfile and
# images/runtime/Dockerfile of github.com/cilium/cilium assemble them.
#
# Usage:
#   cilium.sh                 all stages; prints the two image tags
#   cilium.sh binaries        the Go binaries only
#   cilium.sh runtime         the runtime root filesystem only
#   cilium.sh images          the images (builds the binaries when missing)
#   cilium.sh tags            prints the two image tags, builds nothing
#
# Stages and what they cache in ${MESHBENCH_CACHE}:
#   binaries  bin/cilium-<version>/: cilium-agent, cilium-dbg, cilium-health,
#             cilium-health-responder, cilium-mount, cilium-sysctlfix,
#             cilium-cni, cilium-operator-generic (a wrapper module that
#             copies cilium's two replace lines; the cilium/gobgp fork is
#             unknown to the checksum database, hence GONOSUMDB)
#   runtime   rootfs/: a Debian minbase with clang-19, llvm-19, iproute2,
#             iptables, ipset, kmod, bpftool (Cilium's runtime image)
#   images    meshbench/cilium:<version> (runtime + binaries + bpf/ sources
#             + the init and CNI install scripts) and
#             meshbench/cilium-operator-generic:<version>
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "${OFFLINE_DIR}/images.sh"

CILIUM_MODULE=github.com/cilium/cilium
CILIUM_TAG="${CILIUM_VERSION#v}"
CILIUM_BIN="${MESHBENCH_CACHE}/bin/cilium-${CILIUM_VERSION}"
CILIUM_IMAGE="${CILIUM_IMAGE_REPO}:${CILIUM_VERSION}"
CILIUM_OPERATOR_IMAGE="${CILIUM_OPERATOR_IMAGE_REPO}:${CILIUM_VERSION}"
export GONOSUMDB="${GONOSUMDB:+${GONOSUMDB},}github.com/cilium/gobgp"

# cilium_src: the module's directory in the module cache (downloads it).
cilium_src() {
	(cd "${MESHBENCH_CACHE}" && GOFLAGS=-mod=mod go mod download -json "${CILIUM_MODULE}@${CILIUM_VERSION}" | jq -r .Dir)
}

# cilium_replaces SRC: the replace lines of cilium's go.mod, as old=new@version.
cilium_replaces() {
	awk '$1=="replace" && $3=="=>" {print $2"="$4"@"$5}' "$1/go.mod"
}

cilium_binaries() {
	local src ldflags
	src=$(cilium_src)
	mapfile -t GO_REPLACES < <(cilium_replaces "${src}")
	[ "${#GO_REPLACES[@]}" -gt 0 ] || die "no replace lines in ${src}/go.mod"
	ldflags="-s -w -X 'github.com/cilium/cilium/pkg/version.ciliumVersion=${CILIUM_TAG} meshbench-offline'"
	# The agent's containers run as root with the host's users; osusergo as upstream.
	GO_BUILD_FLAGS="-tags=osusergo" go_module_build cilium-agent "${CILIUM_MODULE}" "${CILIUM_VERSION}" \
		"${CILIUM_BIN}/agent" "${ldflags}" 0 \
		"${CILIUM_MODULE}/daemon" "${CILIUM_MODULE}/cilium-dbg" "${CILIUM_MODULE}/cilium-health" \
		"${CILIUM_MODULE}/cilium-health/responder" "${CILIUM_MODULE}/tools/mount" \
		"${CILIUM_MODULE}/tools/sysctlfix" "${CILIUM_MODULE}/plugins/cilium-cni"
	GO_BUILD_FLAGS="-tags=osusergo,ipam_provider_operator" go_module_build cilium-operator "${CILIUM_MODULE}" "${CILIUM_VERSION}" \
		"${CILIUM_BIN}/operator" "${ldflags}" 0 "${CILIUM_MODULE}/operator"
}

# The agent's userland, as images/runtime/install-runtime-deps.sh installs
# it, plus the compiler the agent runs to build its datapath (upstream ships
# its own clang/llc; Debian's clang-19 is the same LLVM major) and bpftool.
CILIUM_RUNTIME_PKGS="bash-completion,iproute2,iptables,ipset,kmod,ca-certificates,libatomic1,util-linux,clang-${CILIUM_LLVM},llvm-${CILIUM_LLVM},bpftool"

# cilium_cache_key: what the agent image depends on.
cilium_cache_key() {
	cat "${OFFLINE_DIR}/versions.env" "${BASH_SOURCE[0]}" "${CILIUM_BIN}/agent/.stamp" "${CILIUM_BIN}/operator/.stamp" |
		sha256sum | cut -c1-16
}

# cilium_agent_root DIR SRC: fills DIR with the agent image's files: the
# runtime root, the binaries under their upstream names, the BPF sources in
# /var/lib/cilium/bpf (upstream's install-bpf, without tests), the scripts the
# chart's init containers run, and the CNI loopback plugin.
cilium_agent_root() {
	local dir="$1" src="$2" root b
	root=$(debian_rootfs cilium-runtime "${CILIUM_RUNTIME_PKGS}")
	[ -d "${root}/usr" ] || die "no cilium runtime rootfs at '${root}'"
	cp -a "${root}/." "${dir}/"
	# What the agent never runs: LLVM's other tools, documentation and the
	# sanitizer runtimes (a third of the root; every node loads the image).
	find "${dir}/usr/lib/llvm-${CILIUM_LLVM}/bin" -mindepth 1 ! -name clang ! -name "clang-${CILIUM_LLVM}" ! -name llc -delete
	rm -rf "${dir}"/usr/share/{doc,man,info,locale} "${dir}"/usr/lib/x86_64-linux-gnu/lib{a,hwa,l,t,ub}san.so* \
		"${dir}/usr/lib/x86_64-linux-gnu/libclang-${CILIUM_LLVM}.so"*
	ln -sf "/usr/bin/clang-${CILIUM_LLVM}" "${dir}/usr/local/bin/clang"
	ln -sf "/usr/bin/llc-${CILIUM_LLVM}" "${dir}/usr/local/bin/llc"
	# iptables: the wrapper picks the node's backend (nft or legacy) on first use.
	# (run as a file: the installer deletes "$0" when it is done)
	install -m 0755 "${src}/images/runtime/iptables-wrapper-installer.sh" "${dir}/tmp/"
	chroot "${dir}" /tmp/iptables-wrapper-installer.sh --no-sanity-check >/dev/null
	rm -f "${dir}/tmp/iptables-wrapper-installer.sh"
	local -A names=([daemon]=cilium-agent [cilium-dbg]=cilium-dbg [cilium-health]=cilium-health
		[responder]=cilium-health-responder [mount]=cilium-mount [sysctlfix]=cilium-sysctlfix)
	for b in "${!names[@]}"; do
		install -m 0755 "${CILIUM_BIN}/agent/${b}" "${dir}/usr/bin/${names[${b}]}"
	done
	ln -sf cilium-dbg "${dir}/usr/bin/cilium"
	install -D -m 0755 "${CILIUM_BIN}/agent/cilium-cni" "${dir}/opt/cni/bin/cilium-cni"
	install -D -m 0755 "${MESHBENCH_CACHE}/bin/cni-plugins-${CNI_PLUGINS_VERSION}/loopback" "${dir}/cni/loopback"
	install -m 0755 "${src}/images/cilium/init-container.sh" "${src}/plugins/cilium-cni/install-plugin.sh" \
		"${src}/plugins/cilium-cni/cni-uninstall.sh" "${dir}/"
	install -d -m 0750 "${dir}/var/lib/cilium"
	(cd "${src}" && find bpf -type f ! -path 'bpf/tests/*' ! -path 'bpf/complexity-tests/*' ! -path 'bpf/custom/*' \
		! -name Makefile ! -name Makefile.bpf ! -name .gitignore -print0 |
		xargs -0 -I{} install -D -m 0644 {} "${dir}/var/lib/cilium/{}")
	install -d "${dir}/home/cilium"
	# (not iptables itself: its first run picks the backend, which must be the node's)
	chroot "${dir}" /bin/sh -c 'ip -V && test -x /usr/sbin/iptables-wrapper' >/dev/null || die "no shell, ip or iptables wrapper in the agent root"
	# The datapath compiler runs: clang targets BPF, as the agent calls it.
	echo 'int x;' | chroot "${dir}" clang -O2 --target=bpf -c -x c - -o /dev/null ||
		die "clang-${CILIUM_LLVM} cannot compile for BPF in the agent image"
}

cilium_images() {
	local key src dir
	if [ ! -f "${CILIUM_BIN}/agent/.stamp" ] || [ ! -f "${CILIUM_BIN}/operator/.stamp" ]; then
		cilium_binaries
	fi
	[ -x "${MESHBENCH_CACHE}/bin/cni-plugins-${CNI_PLUGINS_VERSION}/loopback" ] ||
		"${OFFLINE_DIR}/node-image.sh" binaries
	key=$(cilium_cache_key)
	if [ "$(image_label "${CILIUM_IMAGE}")" = "${key}" ] && [ "$(image_label "${CILIUM_OPERATOR_IMAGE}")" = "${key}" ]; then
		log "images ${CILIUM_IMAGE} ${CILIUM_OPERATOR_IMAGE}: current"
		return 0
	fi
	src=$(cilium_src)
	dir=$(mktemp -d "${MESHBENCH_CACHE}/tmp.XXXXXX")
	cilium_agent_root "${dir}" "${src}"
	image_from_dir "${CILIUM_IMAGE}" "${dir}" --change "LABEL meshbench.cache-key=${key}" \
		--change 'WORKDIR /home/cilium' --change 'ENV INITSYSTEM=SYSTEMD' --change 'CMD ["/usr/bin/cilium-dbg"]'
	rm -rf "${dir}"
	dir=$(mktemp -d)
	minimal_root "${dir}"
	install -D -m 0755 "${CILIUM_BIN}/operator/operator" "${dir}/usr/bin/cilium-operator-generic"
	image_from_dir "${CILIUM_OPERATOR_IMAGE}" "${dir}" --change "LABEL meshbench.cache-key=${key}" \
		--change 'ENTRYPOINT ["/usr/bin/cilium-operator-generic"]'
	rm -rf "${dir}"
}

case "${1:-all}" in
binaries) timed "cilium binaries" cilium_binaries ;;
runtime) timed "cilium runtime" debian_rootfs cilium-runtime "${CILIUM_RUNTIME_PKGS}" >/dev/null ;;
images) timed "cilium images" cilium_images ;;
all)
	timed "cilium binaries" cilium_binaries
	timed "cilium runtime" debian_rootfs cilium-runtime "${CILIUM_RUNTIME_PKGS}" >/dev/null
	timed "cilium images" cilium_images
	;;
tags) ;;
*) die "unknown stage '${1}' (want binaries, images, all or tags)" ;;
esac
echo "${CILIUM_IMAGE} ${CILIUM_OPERATOR_IMAGE}"
