#!/usr/bin/env bash
# node-image.sh: build the kind node image ${NODE_IMAGE_REPO}:${KUBERNETES_VERSION}
# offline, from the Go module proxy and Debian's archive only.
#
# It assembles the node the way kind's base image and `kind build node-image`
# do, without pulling anything:
#   1. binaries: Kubernetes, containerd, runc, crictl, CNI plugins, etcd,
#      coredns (Go modules) and pause (C file in the Kubernetes module);
#   2. component images: etcd, coredns, pause and kube-* images, tagged as
#      kubeadm expects, saved as docker archives;
#   3. node rootfs: debootstrap + kind's images/base/files + the binaries,
#      imported as the base image;
#   4. node image: a container from the base image imports the component
#      images into its containerd, and is committed.
#
# Every artifact is cached under ${MESHBENCH_CACHE} keyed by its versions;
# when the image already exists with the same cache key, nothing is done.
#
# Usage: hack/offline/node-image.sh [all|binaries|images|rootfs|node]
#   FORCE=1 rebuilds the image (cached binaries are still reused).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "${OFFLINE_DIR}/images.sh"

BIN="${MESHBENCH_CACHE}/bin"
NODE_IMAGE="${NODE_IMAGE_REPO}:${KUBERNETES_VERSION}"
ARCHIVES="${MESHBENCH_CACHE}/images/k8s-${KUBERNETES_VERSION}"

k8s_minor() { local v="${KUBERNETES_VERSION#v}"; v="${v#*.}"; echo "${v%%.*}"; }
k8s_major() { local v="${KUBERNETES_VERSION#v}"; echo "${v%%.*}"; }
# staging_version: k8s.io/kubernetes v1.X.Y ships its staging modules as v0.X.Y.
staging_version() { echo "v0.${KUBERNETES_VERSION#v*.}"; }
module_time() { go mod download -json "$1@$2" | jq -r '.Info' | xargs jq -r '.Time'; }

# ---------------------------------------------------------------- binaries

build_kubernetes() {
	local gomod sv date ldflags k
	gomod=$(go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | jq -r .GoMod)
	sv=$(staging_version)
	# every "k8s.io/x => ./staging/src/k8s.io/x" becomes "k8s.io/x => k8s.io/x v0.X.Y"
	GO_REPLACES=()
	while read -r mod; do
		GO_REPLACES+=("${mod}=${mod}@${sv}")
	done < <(awk '$2=="=>" && $3 ~ /^\.\/staging\// {print $1}' "${gomod}")
	[ "${#GO_REPLACES[@]}" -gt 10 ] || die "found only ${#GO_REPLACES[@]} staging replaces in ${gomod}"
	date=$(module_time k8s.io/kubernetes "${KUBERNETES_VERSION}")
	ldflags="-s -w"
	for k in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
		ldflags+=" -X ${k}.gitVersion=${KUBERNETES_VERSION} -X ${k}.gitMajor=$(k8s_major) -X ${k}.gitMinor=$(k8s_minor)"
		ldflags+=" -X ${k}.gitTreeState=clean -X ${k}.buildDate=${date}"
	done
	go_module_build kubernetes k8s.io/kubernetes "${KUBERNETES_VERSION}" "${BIN}/kubernetes-${KUBERNETES_VERSION}" "${ldflags}" 0 \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy \
		k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kubectl
	GO_REPLACES=()
}

build_containerd() {
	local p=github.com/containerd/containerd/v2
	GO_BUILD_FLAGS="-tags=no_aufs,no_zfs,no_btrfs,no_devmapper" go_module_build containerd "${p}" "${CONTAINERD_VERSION}" \
		"${BIN}/containerd-${CONTAINERD_VERSION}" \
		"-s -w -X ${p}/version.Version=${CONTAINERD_VERSION} -X ${p}/version.Package=${p}" 0 \
		"${p}/cmd/containerd" "${p}/cmd/containerd-shim-runc-v2" "${p}/cmd/ctr"
}

build_runc() {
	# runc needs cgo (nsenter) and libseccomp (main installs libseccomp-dev);
	# it links dynamically against the same Debian release the node rootfs uses.
	GO_BUILD_FLAGS="-tags=seccomp,urfave_cli_no_docs" go_module_build runc github.com/opencontainers/runc "${RUNC_VERSION}" \
		"${BIN}/runc-${RUNC_VERSION}" "-s -w -X main.gitCommit=${RUNC_VERSION}" 1 github.com/opencontainers/runc
}

build_crictl() {
	go_module_build crictl sigs.k8s.io/cri-tools "${CRICTL_VERSION}" "${BIN}/crictl-${CRICTL_VERSION}" \
		"-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=${CRICTL_VERSION}" 0 sigs.k8s.io/cri-tools/cmd/crictl
}

build_cni() {
	local p=github.com/containernetworking/plugins
	go_module_build cni-plugins "${p}" "${CNI_PLUGINS_VERSION}" "${BIN}/cni-plugins-${CNI_PLUGINS_VERSION}" \
		"-s -w -X ${p}/pkg/utils/buildversion.BuildVersion=${CNI_PLUGINS_VERSION}" 0 \
		"${p}/plugins/main/bridge" "${p}/plugins/main/loopback" "${p}/plugins/main/ptp" \
		"${p}/plugins/ipam/host-local" "${p}/plugins/meta/portmap"
}

build_etcd() {
	local out="${BIN}/etcd-${ETCD_VERSION}"
	# server/v3's main package builds as "server"; etcdctl comes from its own module.
	# shellcheck disable=SC2034 # read by go_module_build
	GO_REQUIRES=("go.etcd.io/etcd/etcdctl/v3@${ETCD_VERSION}")
	go_module_build etcd go.etcd.io/etcd/server/v3 "${ETCD_VERSION}" "${out}" "-s -w" 0 \
		go.etcd.io/etcd/server/v3 go.etcd.io/etcd/etcdctl/v3
	# shellcheck disable=SC2034 # read by go_module_build
	GO_REQUIRES=()
	[ ! -e "${out}/server" ] || mv "${out}/server" "${out}/etcd"
	[ ! -e "${out}/v3" ] || mv "${out}/v3" "${out}/etcd"
	[ -x "${out}/etcd" ] || die "etcd binary missing in ${out}"
}

# COREDNS_MAIN: CoreDNS with the plugins kubeadm's Corefile names (errors,
# health, ready, kubernetes, prometheus, forward, cache, loop, reload,
# loadbalance) and a few a user's Corefile often adds (log, hosts, rewrite,
# template, whoami), the way CoreDNS documents a build with chosen plugins:
# a main that imports them instead of core/plugin's all. The cloud
# back-ends (route53, azure, clouddns), etcd, nomad, dnstap, geoip, trace
# and QUIC are left out: they were most of a 316 s cold build.
COREDNS_MAIN='package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/rewrite"
	_ "github.com/coredns/coredns/plugin/template"
	_ "github.com/coredns/coredns/plugin/whoami"
)

func main() { coremain.Run() }'

build_coredns() {
	GO_MAIN_SRC="${COREDNS_MAIN}" go_module_build coredns github.com/coredns/coredns "${COREDNS_VERSION}" \
		"${BIN}/coredns-${COREDNS_VERSION}" "-s -w -X github.com/coredns/coredns/coremain.GitCommit=${COREDNS_VERSION}" 0 .
}

build_pause() {
	local out="${BIN}/pause-${PAUSE_VERSION}" src
	src="$(go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | jq -r .Dir)/build/pause/linux/pause.c"
	local key="${src} ${PAUSE_VERSION}"
	if stamp_ok "${out}/.stamp" "${key}"; then
		log "pause: cached in ${out}"
		return 0
	fi
	mkdir -p "${out}"
	gcc -Os -Wall -Werror -static -DVERSION="v${PAUSE_VERSION}" -o "${out}/pause" "${src}"
	strip "${out}/pause"
	echo "${key}" >"${out}/.stamp"
}

stage_binaries() {
	# Three jobs at once on 2 cores: one go build leaves a core idle while
	# it downloads modules, links, and compiles its last packages, so
	# Kubernetes (the longest) builds beside the runtime's builds, and the
	# two debootstraps (network and dpkg) beside both.
	local pids=() names=(kubernetes runtime rootfs) i
	timed build-kubernetes build_kubernetes &
	pids+=($!)
	(
		timed build-containerd build_containerd
		timed build-runc build_runc
		timed build-crictl build_crictl
		timed build-cni-plugins build_cni
		timed build-etcd build_etcd
		timed build-coredns build_coredns
		timed build-pause build_pause
	) &
	pids+=($!)
	timed debootstrap stage_debootstrap &
	pids+=($!)
	for i in "${!pids[@]}"; do
		wait "${pids[${i}]}" || die "the ${names[${i}]} job failed (its log is above)"
	done
}

# stage_debootstrap: the Debian roots the images use, cached (debian_rootfs).
stage_debootstrap() {
	debian_rootfs node "${NODE_PACKAGES}" >/dev/null
	debian_rootfs kube-proxy "${KUBE_PROXY_PACKAGES}" >/dev/null
}

# ---------------------------------------------------------- component images

# iptables_wrapper: the kube-proxy image's /usr/sbin/iptables{,-save,-restore}
# (and ip6tables*). On first use it picks the iptables backend (nft or legacy)
# the node already uses (where the kubelet created KUBE-IPTABLES-HINT, else
# where more rules exist), points the alternatives at it and execs it.
iptables_wrapper() {
	cat <<'EOF'
#!/bin/sh
# Picks iptables-nft or iptables-legacy to match the node, once.
set -e
mode=""
for m in nft legacy; do
	if "xtables-${m}-multi" iptables-save -t mangle 2>/dev/null | grep -q KUBE-IPTABLES-HINT ||
	   "xtables-${m}-multi" ip6tables-save -t mangle 2>/dev/null | grep -q KUBE-IPTABLES-HINT; then
		mode="${m}"; break
	fi
done
if [ -z "${mode}" ]; then
	n=$( (xtables-nft-multi iptables-save; xtables-nft-multi ip6tables-save) 2>/dev/null | grep -c '^-' || true)
	l=$( (xtables-legacy-multi iptables-save; xtables-legacy-multi ip6tables-save) 2>/dev/null | grep -c '^-' || true)
	if [ "${l}" -gt "${n}" ]; then mode=legacy; else mode=nft; fi
fi
for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
	update-alternatives --set "${t%%-*}" "/usr/sbin/${t%%-*}-${mode}" >/dev/null 2>&1 || true
	ln -sf "xtables-${mode}-multi" "/usr/sbin/${t}"
done
exec "$(basename "$0")" "$@"
EOF
}

stage_images() {
	local kb="${BIN}/kubernetes-${KUBERNETES_VERSION}" c
	mkdir -p "${ARCHIVES}"
	for c in kube-apiserver kube-controller-manager kube-scheduler; do
		image_archive "registry.k8s.io/${c}:${KUBERNETES_VERSION}" "${ARCHIVES}/${c}.tar" \
			image_from_static_binary "registry.k8s.io/${c}:${KUBERNETES_VERSION}" "${kb}/${c}" "/usr/local/bin/${c}"
	done
	image_archive "registry.k8s.io/kube-proxy:${KUBERNETES_VERSION}" "${ARCHIVES}/kube-proxy.tar" build_kube_proxy_image
	image_archive "registry.k8s.io/etcd:${ETCD_IMAGE_TAG}" "${ARCHIVES}/etcd.tar" \
		image_from_static_binary "registry.k8s.io/etcd:${ETCD_IMAGE_TAG}" "${BIN}/etcd-${ETCD_VERSION}/etcd" /usr/local/bin/etcd \
		"${BIN}/etcd-${ETCD_VERSION}/etcdctl"
	image_archive "registry.k8s.io/coredns/coredns:${COREDNS_VERSION}" "${ARCHIVES}/coredns.tar" \
		image_from_static_binary "registry.k8s.io/coredns/coredns:${COREDNS_VERSION}" "${BIN}/coredns-${COREDNS_VERSION}/coredns" /coredns
	image_archive "registry.k8s.io/pause:${PAUSE_VERSION}" "${ARCHIVES}/pause.tar" \
		image_from_static_binary "registry.k8s.io/pause:${PAUSE_VERSION}" "${BIN}/pause-${PAUSE_VERSION}/pause" /pause
	log "component image archives in ${ARCHIVES}: $(du -sh "${ARCHIVES}" | cut -f1)"
}

build_kube_proxy_image() {
	local tag="registry.k8s.io/kube-proxy:${KUBERNETES_VERSION}" root t
	root=$(debian_rootfs kube-proxy "${KUBE_PROXY_PACKAGES}")
	[ -d "${root}/usr" ] || die "no kube-proxy rootfs at '${root}'"
	local dir
	dir=$(mktemp -d "${MESHBENCH_CACHE}/tmp.XXXXXX")
	cp -a "${root}/." "${dir}/"
	install -m 0755 "${BIN}/kubernetes-${KUBERNETES_VERSION}/kube-proxy" "${dir}/usr/local/bin/kube-proxy"
	iptables_wrapper >"${dir}/usr/sbin/iptables-wrapper"
	chmod 0755 "${dir}/usr/sbin/iptables-wrapper"
	for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
		ln -sf iptables-wrapper "${dir}/usr/sbin/${t}"
	done
	image_from_dir "${tag}" "${dir}" --change 'ENTRYPOINT ["/usr/local/bin/kube-proxy"]'
	rm -rf "${dir}"
}

# ---------------------------------------------------------------- node rootfs

KUBE_PROXY_PACKAGES=iptables,conntrack,ipset,kmod
NODE_PACKAGES=systemd,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,bash,ca-certificates,curl,jq,procps,e2fsprogs,iputils-ping

stage_rootfs() {
	local key root kind_dir base_tag
	kind_dir=$(go mod download -json "sigs.k8s.io/kind@${KIND_VERSION}" | jq -r .Dir)
	key=$(node_cache_key)
	base_tag="${NODE_IMAGE_REPO}-base:${KUBERNETES_VERSION}"
	if [ "$(image_label "${base_tag}")" = "${key}" ]; then
		log "node base image ${base_tag} is current"
		return 0
	fi
	local debian
	debian=$(debian_rootfs node "${NODE_PACKAGES}")
	[ -d "${debian}/usr" ] || die "no node rootfs at '${debian}'"
	root=$(mktemp -d "${MESHBENCH_CACHE}/tmp.XXXXXX")
	cp -a "${debian}/." "${root}/"
	local f="${kind_dir}/images/base/files" kb="${BIN}/kubernetes-${KUBERNETES_VERSION}"
	# kind's images/base/Dockerfile, step by step.
	install -d -m 0755 "${root}/kind" "${root}/kind/bin" "${root}/LICENSES" "${root}/etc/containerd" \
		"${root}/etc/default" "${root}/etc/sysctl.d" "${root}/etc/systemd/system/kubelet.service.d" \
		"${root}/etc/kubernetes/manifests" "${root}/opt/cni/bin" "${root}/usr/local/sbin"
	install -m 0755 "${f}"/usr/local/bin/* "${root}/usr/local/bin/"
	install -m 0644 "${f}"/kind/README.txt "${root}/kind/"
	install -m 0755 "${f}"/kind/bin/* "${root}/kind/bin/"
	install -m 0644 "${f}"/LICENSES/* "${root}/LICENSES/"
	install -m 0644 "${f}"/etc/crictl.yaml "${root}/etc/"
	install -m 0644 "${f}"/etc/containerd/* "${root}/etc/containerd/"
	install -m 0644 "${f}"/etc/default/* "${root}/etc/default/"
	install -m 0644 "${f}"/etc/sysctl.d/* "${root}/etc/sysctl.d/"
	install -m 0644 "${f}"/etc/systemd/system/*.service "${f}"/etc/systemd/system/*.slice "${root}/etc/systemd/system/"
	install -m 0644 "${f}"/etc/systemd/system/kubelet.service.d/* "${root}/etc/systemd/system/kubelet.service.d/"
	find "${root}/lib/systemd/system/sysinit.target.wants/" -name "systemd-tmpfiles-setup.service" -delete
	rm -f "${root}"/lib/systemd/system/multi-user.target.wants/* "${root}"/etc/systemd/system/*.wants/* \
		"${root}"/lib/systemd/system/local-fs.target.wants/* "${root}"/lib/systemd/system/sockets.target.wants/*udev* \
		"${root}"/lib/systemd/system/sockets.target.wants/*initctl* "${root}"/lib/systemd/system/basic.target.wants/*
	echo "ReadKMsg=no" >>"${root}/etc/systemd/journald.conf"
	ln -sf /usr/lib/systemd/systemd "${root}/sbin/init"
	chroot "${root}" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
	chroot "${root}" systemctl mask systemd-binfmt.service >/dev/null 2>&1
	# the runtime
	install -m 0755 "${BIN}/containerd-${CONTAINERD_VERSION}"/{containerd,containerd-shim-runc-v2,ctr} "${root}/usr/local/bin/"
	install -m 0755 "${BIN}/runc-${RUNC_VERSION}/runc" "${root}/usr/local/sbin/runc"
	install -m 0755 "${BIN}/crictl-${CRICTL_VERSION}/crictl" "${root}/usr/local/bin/"
	install -m 0755 "${BIN}/cni-plugins-${CNI_PLUGINS_VERSION}"/{bridge,host-local,loopback,ptp,portmap} "${root}/opt/cni/bin/"
	chroot "${root}" /usr/local/bin/ctr oci spec |
		jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
		jq 'del(.process.rlimits)' >"${root}/etc/containerd/cri-base.json"
	chroot "${root}" /usr/local/sbin/runc --version >/dev/null
	# the pause image kubeadm names, not kind's older default
	sed -i "s|sandbox_image = \"registry.k8s.io/pause:[^\"]*\"|sandbox_image = \"registry.k8s.io/pause:${PAUSE_VERSION}\"|" \
		"${root}/etc/containerd/config.toml"
	grep -q "pause:${PAUSE_VERSION}" "${root}/etc/containerd/config.toml" || die "could not set sandbox_image"
	# `kind build node-image`: Kubernetes binaries in /usr/bin and /kind/version
	install -m 0755 "${kb}"/{kubeadm,kubelet,kubectl} "${root}/usr/bin/"
	# kind's legacy host-path StorageClass, which needs no image (kind's own
	# storage manifest needs local-path-provisioner, which is not served).
	install -d -m 0755 "${root}/kind/manifests"
	cat >"${root}/kind/manifests/default-storage.yaml" <<-'EOF'
		apiVersion: storage.k8s.io/v1
		kind: StorageClass
		metadata:
		  name: standard
		  annotations:
		    storageclass.kubernetes.io/is-default-class: "true"
		provisioner: kubernetes.io/host-path
	EOF
	printf '%s' "${KUBERNETES_VERSION}" >"${root}/kind/version"
	chmod 0644 "${root}/kind/version"
	image_from_dir "${base_tag}" "${root}" \
		--change "LABEL meshbench.cache-key=${key}" \
		--change 'ENV container=docker' \
		--change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]'
	rm -rf "${root}"
}

# ---------------------------------------------------------------- node image

stage_node() {
	local key base_tag id
	key=$(node_cache_key)
	base_tag="${NODE_IMAGE_REPO}-base:${KUBERNETES_VERSION}"
	id="meshbench-node-build-$$"
	docker rm -f "${id}" >/dev/null 2>&1 || true
	docker run -d --name "${id}" --entrypoint=sleep --security-opt seccomp=unconfined --network none \
		"${base_tag}" infinity >/dev/null
	# shellcheck disable=SC2064
	trap "docker rm -f -v ${id} >/dev/null 2>&1 || true" RETURN
	docker exec "${id}" bash -c 'nohup containerd >/dev/null 2>&1 &'
	for _ in $(seq 1 30); do
		docker exec "${id}" ctr info >/dev/null 2>&1 && break
		sleep 1
	done
	docker exec "${id}" ctr info >/dev/null
	local a
	for a in "${ARCHIVES}"/*.tar; do
		docker exec -i "${id}" ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned \
			--all-platforms --no-unpack --digests - <"${a}" >/dev/null
	done
	# every image kubeadm needs must be there
	local have want missing=()
	have=$(docker exec "${id}" ctr --namespace=k8s.io images list -q)
	for want in $(docker exec "${id}" kubeadm config images list --kubernetes-version "${KUBERNETES_VERSION}"); do
		grep -qx "${want}" <<<"${have}" || missing+=("${want}")
	done
	[ "${#missing[@]}" = 0 ] || die "images kubeadm needs are missing: ${missing[*]}"
	docker exec "${id}" pkill containerd || true
	for _ in $(seq 1 30); do
		docker exec "${id}" pgrep -x containerd >/dev/null || break
		sleep 1
	done
	docker exec "${id}" rm -rf /run/containerd /tmp/* || true
	local old
	old=$(image_id "${NODE_IMAGE}")
	docker commit \
		--change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
		--change "LABEL meshbench.cache-key=${key}" \
		"${id}" "${NODE_IMAGE}" >/dev/null
	drop_replaced "${old}" "${NODE_IMAGE}"
	log "built ${NODE_IMAGE}: $(docker image inspect -f '{{.Size}}' "${NODE_IMAGE}" | numfmt --to=iec)"
}

# node_cache_key: what the node image depends on.
node_cache_key() {
	cat "${OFFLINE_DIR}/versions.env" "${OFFLINE_DIR}/node-image.sh" "${OFFLINE_DIR}/images.sh" "${OFFLINE_DIR}/lib.sh" |
		sha256sum | cut -c1-16
}

main() {
	local what="${1:-all}" key
	key=$(node_cache_key)
	if [ "${what}" = all ] && [ -z "${FORCE:-}" ] && [ "$(image_label "${NODE_IMAGE}")" = "${key}" ]; then
		log "${NODE_IMAGE} is current (cache key ${key}); FORCE=1 rebuilds it"
		return 0
	fi
	mkdir -p "${MESHBENCH_CACHE}"
	apt_install "${BUILD_PACKAGES[@]}"
	docker info >/dev/null 2>&1 || die "no Docker engine: run hack/offline/docker.sh first"
	case "${what}" in
	binaries) stage_binaries ;;
	images) timed component-images stage_images ;;
	rootfs) timed node-rootfs stage_rootfs ;;
	node) timed node-image stage_node ;;
	all)
		stage_binaries
		timed component-images stage_images
		timed node-rootfs stage_rootfs
		timed node-image stage_node
		;;
	*) die "unknown stage ${what}" ;;
	esac
	log "cache ${MESHBENCH_CACHE}: $(du -sh "${MESHBENCH_CACHE}" 2>/dev/null | cut -f1)"
}

main "$@"
