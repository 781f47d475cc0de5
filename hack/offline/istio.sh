#!/usr/bin/env bash
# istio.sh: Istio's pilot-discovery (istiod) and pilot-agent images, built
# from the Go module proxy and Debian alone (no registry), for the two
# istio.io/istio versions in versions.env. Envoy is not built: the agent image
# runs pilot-agent without Envoy (proxyless gRPC, the grpc-agent injection
# template).
#
# Usage:
#   istio.sh [VERSION] [STAGE] [CLUSTER]
#     VERSION  130, 131 or all (default all)
#     STAGE    all (default): binaries, then images; prints the image tags
#              binaries      the Go binaries only
#              images        the images (builds the binaries when missing)
#              load          all, then loads the images into the kind cluster CLUSTER
#              tags          prints the image tags, builds nothing
#              charts        prints the directory of the version's Helm
#                            charts (manifests/charts of its module,
#                            downloaded when missing; -mesh-charts)
#
# Every requested version's module is downloaded, and its binaries built,
# before any image is made: a version that cannot be downloaded or does not
# build stops the run with a message naming the version and the module.
#
# Stages and what they cache in ${MESHBENCH_CACHE}:
#   binaries  bin/istio-<version>/: pilot-discovery and pilot-agent
#             (CGO_ENABLED=0, -trimpath, -s -w, Istio's version stamps), from
#             a wrapper module generated in src/ (lib.sh go_module_build) with
#             the version's ISTIO_<n>_REPLACES; nothing of Istio's is written
#             in the repository, and meshbench's go.mod is not involved
#   base      rootfs/istio-base-<suite>-<hash>/: Debian minbase with CA
#             certificates (the base of both images)
#   images    meshbench/pilot:<tag> (pilot/docker/Dockerfile.pilot: user
#             1337:1337, entrypoint /usr/local/bin/pilot-discovery) and
#             meshbench/proxyv2-agent:<tag> (pilot/docker/Dockerfile.proxyv2
#             without Envoy and its bootstrap template: WORKDIR /, entrypoint
#             /usr/local/bin/pilot-agent, the user of the pod spec), both with
#             the istio-proxy user (uid and gid 1337) of Istio's base image.
#             Labelled with a cache key; no rebuild when the key is current.
#
# <tag> is <minor>-dev.<commit>, e.g. 1.30-dev.9739e10eb9d7: the version the
# binaries report (`pilot-discovery version`), from the module's VERSION file
# (as Istio's Makefile makes it) and the pseudo-version's commit.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "${OFFLINE_DIR}/images.sh"

ISTIO_MODULE=istio.io/istio
ISTIO_PKGS=("${ISTIO_MODULE}/pilot/cmd/pilot-discovery" "${ISTIO_MODULE}/pilot/cmd/pilot-agent")
ISTIO_BASE_PKGS=ca-certificates

# What the run is doing, named in the error when it fails (EXIT trap).
ISTIO_DOING=""
_istio_exit() {
	local rc=$?
	(exit "${rc}") || _stage_exit
	if [ "${rc}" != 0 ] && [ -n "${ISTIO_DOING}" ]; then
		log "ERROR: ${ISTIO_DOING} (rc=${rc})"
	fi
	return "${rc}"
}
trap _istio_exit EXIT

# istio_version N: the module version pinned for N (130 or 131).
istio_version() {
	local var="ISTIO_VERSION_$1"
	[ -n "${!var:-}" ] || die "no ${var} in versions.env (want 130 or 131)"
	echo "${!var}"
}

# istio_tag N: the version string the binaries report and the images' tag.
istio_tag() {
	local v
	v=$(istio_version "$1")
	echo "1.${1#1}-dev.${v##*-}"
}

istio_bin() { echo "${MESHBENCH_CACHE}/bin/istio-$(istio_version "$1")"; }

# istio_src N: downloads the module of N and prints its directory; stops,
# naming the version and the module, when the proxy does not serve it.
istio_src() {
	local v out dir
	v=$(istio_version "$1")
	out=$( (cd "${MESHBENCH_CACHE}" && GOFLAGS=-mod=mod go mod download -json "${ISTIO_MODULE}@${v}" 2>/dev/null) || true)
	dir=$(jq -r '.Dir // empty' <<<"${out}" 2>/dev/null || true)
	if [ -z "${dir}" ] || [ ! -f "${dir}/go.mod" ]; then
		die "Istio $1: cannot download ${ISTIO_MODULE}@${v}: $(jq -r '.Error // empty' <<<"${out}" 2>/dev/null || echo "${out}")"
	fi
	echo "${dir}"
}

# istio_check N: the module of N is served and is the minor release its
# tag names (its VERSION file), and every replacement is served too.
istio_check() {
	local n="$1" v src minor r out replaces_var="ISTIO_$1_REPLACES" replaces
	v=$(istio_version "${n}")
	src=$(istio_src "${n}")
	minor=$(tr -d '[:space:]' <"${src}/VERSION")
	[ "${minor}" = "1.${n#1}" ] ||
		die "Istio ${n}: ${ISTIO_MODULE}@${v} is Istio ${minor} (its VERSION file), not 1.${n#1}"
	read -r -a replaces <<<"${!replaces_var:-}"
	for r in ${replaces[@]+"${replaces[@]}"}; do
		out=$( (cd "${MESHBENCH_CACHE}" && GOFLAGS=-mod=mod go mod download -json "${r#*=}" 2>/dev/null) || true)
		if [ -z "$(jq -r '.Dir // empty' <<<"${out}" 2>/dev/null || true)" ]; then
			die "Istio ${n}: ${ISTIO_MODULE}@${v} needs the replacement ${r#*=}, which cannot be downloaded: $(jq -r '.Error // empty' <<<"${out}" 2>/dev/null || echo "${out}")"
		fi
	done
	log "Istio ${n}: ${ISTIO_MODULE}@${v} (Istio ${minor}) and ${#replaces[@]} replacements served"
}

# istio_ldflags N: -s -w and Istio's version stamps (common/scripts/
# report_build_info.sh names them).
istio_ldflags() {
	local n="$1" v p=istio.io/istio/pkg/version
	v=$(istio_version "${n}")
	printf '%s' "-s -w -X ${p}.buildVersion=$(istio_tag "${n}") -X ${p}.buildGitRevision=${v##*-}" \
		" -X ${p}.buildStatus=Clean -X ${p}.buildTag=${v} -X ${p}.buildHub=${ISTIO_PILOT_IMAGE_REPO%/*}" \
		" -X ${p}.buildOS=$(go env GOOS) -X ${p}.buildArch=$(go env GOARCH)"
}

istio_binaries() {
	local n="$1" v bin replaces_var="ISTIO_$1_REPLACES" b want got
	v=$(istio_version "${n}")
	bin=$(istio_bin "${n}")
	read -r -a GO_REPLACES <<<"${!replaces_var:-}"
	ISTIO_DOING="Istio ${n}: ${ISTIO_MODULE}@${v} does not build (pilot-discovery, pilot-agent; replaces: ${!replaces_var:-none})"
	GO_BUILD_FLAGS="" go_module_build "istio" "${ISTIO_MODULE}" "${v}" "${bin}" "$(istio_ldflags "${n}")" 0 "${ISTIO_PKGS[@]}"
	want=$(istio_tag "${n}")
	for b in pilot-discovery pilot-agent; do
		is_static "${bin}/${b}" || die "${bin}/${b} is not a static binary"
		got=$(istio_reported "${bin}/${b}")
		[ "${got}" = "${want} ${v##*-}" ] || die "Istio ${n}: ${b} reports version and revision '${got}', not ${want} ${v##*-}"
	done
	ISTIO_DOING=""
	log "Istio ${n}: pilot-discovery and pilot-agent report ${want}"
}

# istio_reported CMD...: the version and revision that CMD (a binary, or a
# docker run of an image) reports with `version -o json`.
istio_reported() {
	("$@" version -o json 2>/dev/null || true) | jq -r '"\(.clientVersion.version) \(.clientVersion.revision)"' 2>/dev/null || true
}

# istio_cache_key N: what the images of N depend on.
istio_cache_key() {
	cat "${BASH_SOURCE[0]}" "$(istio_bin "$1")/.stamp" "$(debian_rootfs istio-base "${ISTIO_BASE_PKGS}").stamp" |
		sha256sum | cut -c1-16
}

# istio_root DIR: the base of both images: Debian minbase with CA
# certificates, without documentation, and the istio-proxy user (1337:1337)
# that Istio's base and distroless images have.
istio_root() {
	local dir="$1" root
	root=$(debian_rootfs istio-base "${ISTIO_BASE_PKGS}")
	[ -d "${root}/usr" ] || die "no istio base rootfs at '${root}'"
	cp -a "${root}/." "${dir}/"
	rm -rf "${dir}"/usr/share/{doc,man,info,locale}
	chroot "${dir}" groupadd --gid 1337 istio-proxy
	chroot "${dir}" useradd --uid 1337 --gid 1337 --create-home --shell /usr/sbin/nologin istio-proxy
}

# istio_image TAG BINARY CHANGE...: the image TAG of the Istio base with
# BINARY in /usr/local/bin as its entrypoint, and docker import's CHANGEs.
istio_image() {
	local tag=$1 binary=$2 dir name
	shift 2
	name=$(basename "${binary}")
	dir=$(mktemp -d "${MESHBENCH_CACHE}/tmp.XXXXXX")
	istio_root "${dir}"
	install -m 0755 "${binary}" "${dir}/usr/local/bin/${name}"
	image_from_dir "${tag}" "${dir}" "$@" --change "ENTRYPOINT [\"/usr/local/bin/${name}\"]"
	rm -rf "${dir}"
}

istio_images() {
	local n="$1" v key bin tag pilot agent
	v=$(istio_version "${n}")
	bin=$(istio_bin "${n}")
	[ -f "${bin}/.stamp" ] || istio_binaries "${n}"
	tag=$(istio_tag "${n}")
	pilot="${ISTIO_PILOT_IMAGE_REPO}:${tag}"
	agent="${ISTIO_AGENT_IMAGE_REPO}:${tag}"
	key=$(istio_cache_key "${n}")
	if [ "$(image_label "${pilot}")" = "${key}" ] && [ "$(image_label "${agent}")" = "${key}" ]; then
		log "images ${pilot} ${agent}: current"
		return 0
	fi
	local labels=(--change "LABEL meshbench.cache-key=${key}" --change "LABEL meshbench.istio.module=${ISTIO_MODULE}@${v}"
		--change "LABEL meshbench.istio.version=${tag}")
	istio_image "${pilot}" "${bin}/pilot-discovery" "${labels[@]}" --change 'USER 1337:1337'
	istio_image "${agent}" "${bin}/pilot-agent" "${labels[@]}" --change 'WORKDIR /'
	# The images run what they were built for, as the user they name.
	[ "$(istio_reported docker run --rm "${pilot}")" = "${tag} ${v##*-}" ] || die "${pilot} does not run pilot-discovery ${tag}"
	[ "$(docker run --rm --entrypoint id "${pilot}" -u)" = 1337 ] || die "${pilot} does not run as 1337"
	[ "$(istio_reported docker run --rm "${agent}")" = "${tag} ${v##*-}" ] || die "${agent} does not run pilot-agent ${tag}"
}

istio_check_all() {
	local n
	for n in "$@"; do
		istio_check "${n}"
	done
}

istio_tags() {
	local n
	for n in "$@"; do
		printf '%s:%s %s:%s\n' "${ISTIO_PILOT_IMAGE_REPO}" "$(istio_tag "${n}")" "${ISTIO_AGENT_IMAGE_REPO}" "$(istio_tag "${n}")"
	done
}

case "${1:-all}" in
130 | 131) versions=("$1") ;;
all) versions=(130 131) ;;
*) die "unknown Istio version '${1}' (want 130, 131 or all)" ;;
esac
stage="${2:-all}"
case "${stage}" in
binaries | images | all | load | tags | charts) ;;
*) die "unknown stage '${stage}' (want binaries, images, all, load, tags or charts)" ;;
esac
if [ "${stage}" = charts ]; then
	mkdir -p "${MESHBENCH_CACHE}"
	for n in "${versions[@]}"; do
		src=$(istio_src "${n}")
		echo "${src}/manifests/charts"
	done
	exit 0
fi
if [ "${stage}" = load ]; then
	[ -n "${3:-}" ] || die "usage: istio.sh VERSION load CLUSTER"
fi
if [ "${stage}" != tags ]; then
	mkdir -p "${MESHBENCH_CACHE}"
	timed "istio check" istio_check_all "${versions[@]}"
	for n in "${versions[@]}"; do
		timed "istio ${n} binaries" istio_binaries "${n}"
	done
fi
if [ "${stage}" != tags ] && [ "${stage}" != binaries ]; then
	timed "istio base" debian_rootfs istio-base "${ISTIO_BASE_PKGS}" >/dev/null
	for n in "${versions[@]}"; do
		timed "istio ${n} images" istio_images "${n}"
	done
fi
if [ "${stage}" = load ]; then
	mapfile -t tags < <(istio_tags "${versions[@]}" | tr ' ' '\n')
	timed "istio load" load_images "$3" "${tags[@]}"
fi
istio_tags "${versions[@]}"
