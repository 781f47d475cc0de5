# shellcheck shell=bash
# Shared helpers for the offline tooling. Source it; do not run it.
#
# Everything built here comes from the Go module proxy (through the go
# command) or from Debian's archive (through apt-get and debootstrap, using the
# mirror this machine's apt sources name). Every artifact is cached under
# ${MESHBENCH_CACHE}, keyed by the versions in versions.env.

OFFLINE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck disable=SC2034 # used by the scripts that source this file
REPO_ROOT="$(cd "${OFFLINE_DIR}/../.." && pwd)"
# shellcheck source=versions.env
source "${OFFLINE_DIR}/versions.env"

MESHBENCH_CACHE="${MESHBENCH_CACHE:-/var/cache/meshbench}"
export MESHBENCH_CACHE
# Builds run niced so that they do not disturb measurements on the same cores.
NICE="${NICE:-nice -n 10}"
# Go builds of binaries for images: -ldflags=-w drops the DWARF from the
# binary, but the compiler still writes it for every package unless told
# (7 % of the CPU of a cold build of cmd/mbloadgen, 2026-12-05).
GO_NO_DWARF="-gcflags=all=-dwarf=false"
export PATH="/usr/local/go/bin:${PATH}"

log() { printf '%s [offline] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Command substitutions fail like the commands they run.
shopt -s inherit_errexit

# timed LABEL CMD...: runs CMD and prints how long it took, as
# "stage LABEL: 12s" (the line every README timing comes from). CMD runs
# under set -e (it is not part of an || list); when it fails, the EXIT trap
# prints the stage's time with FAILED.
STAGE_NAME=""
STAGE_START=0
_stage_exit() {
	local rc=$?
	if [ -n "${STAGE_NAME}" ] && [ "${rc}" != 0 ]; then
		log "stage ${STAGE_NAME}: $(($(date +%s) - STAGE_START))s (FAILED rc=${rc})"
	fi
}
trap _stage_exit EXIT
timed() {
	local label="$1" start outer_name="${STAGE_NAME}" outer_start="${STAGE_START}"
	shift
	start=$(date +%s)
	STAGE_NAME="${label}"
	STAGE_START="${start}"
	log "stage ${label}: start"
	"$@"
	log "stage ${label}: $(($(date +%s) - start))s"
	STAGE_NAME="${outer_name}"
	STAGE_START="${outer_start}"
}

# stamp_ok FILE KEY: true when FILE exists and holds exactly KEY.
stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

# BUILD_PACKAGES: the Debian packages the offline builds need (debootstrap
# for the roots; gcc, libc6-dev, libseccomp-dev and pkg-config for runc and
# pause; jq for the scripts), installed once before builds run side by
# side: two apt-gets at once fail on dpkg's lock.
# shellcheck disable=SC2034 # used by the scripts that source this file
BUILD_PACKAGES=(debootstrap gcc libc6-dev jq libseccomp-dev pkg-config)

# apt_install PKG...: installs the Debian packages that are missing.
apt_install() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q "install ok installed" || missing+=("${p}")
	done
	[ "${#missing[@]}" = 0 ] && return 0
	log "apt-get install ${missing[*]}"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2; then
		apt-get update >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
	fi
}

# debian_mirror: the Debian archive URI this machine's apt sources use
# (override with DEBIAN_MIRROR).
debian_mirror() {
	if [ -n "${DEBIAN_MIRROR:-}" ]; then
		echo "${DEBIAN_MIRROR}"
		return
	fi
	local uri
	uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '/^URIs:/{u=$2} /^Suites:/{for(i=2;i<=NF;i++) if($i=="'"${DEBIAN_SUITE}"'") {print u; exit}}' || true)
	if [ -z "${uri}" ]; then
		uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk '$1=="deb" && $3=="'"${DEBIAN_SUITE}"'" {print $2; exit}' || true)
	fi
	if [ -z "${uri}" ]; then
		# another suite of the same archive (it serves every suite), not
		# the security archive, which serves only updates
		uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
			awk '/^URIs:/ && $2 !~ /security/ && $2 ~ /debian\/?$/ {print $2; exit}' || true)
	fi
	[ -n "${uri}" ] || die "no apt source for Debian ${DEBIAN_SUITE}; set DEBIAN_MIRROR"
	echo "${uri}"
}

# go_module_build NAME MODULE VERSION OUTDIR LDFLAGS CGO PKG...
#
# Builds the main packages PKG... of MODULE@VERSION into OUTDIR through a
# wrapper module generated into the cache (so that a module with replace
# lines in its own go.mod still builds, and nothing is written into the
# repository). Extra replace lines for the wrapper come from the array
# GO_REPLACES (each "old=new@version"), extra required modules from the array
# GO_REQUIRES (each "module@version"), and extra flags from GO_BUILD_FLAGS.
# GO_MAIN_SRC, when set, is the source of a main package written as the
# wrapper module's own main.go; PKG "." then builds it (a binary named
# NAME). The build is skipped when OUTDIR's stamp matches the inputs.
go_module_build() {
	local name="$1" module="$2" version="$3" outdir="$4" ldflags="$5" cgo="$6"
	shift 6
	local pkg_list=("$@")
	local key
	local replaces=() requires=()
	[ -z "${GO_REPLACES+x}" ] || replaces=("${GO_REPLACES[@]}")
	[ -z "${GO_REQUIRES+x}" ] || requires=("${GO_REQUIRES[@]}")
	key="${module}@${version} $(go env GOVERSION) cgo=${cgo} ldflags=${ldflags} flags=${GO_BUILD_FLAGS:-} replaces=${replaces[*]} requires=${requires[*]} pkgs=${pkg_list[*]}"
	[ -z "${GO_MAIN_SRC:-}" ] || key+=" main=$(sha256sum <<<"${GO_MAIN_SRC}" | cut -c1-16)"
	if stamp_ok "${outdir}/.stamp" "${key}"; then
		log "${name}: cached in ${outdir}"
		return 0
	fi
	local wrap="${MESHBENCH_CACHE}/src/${name}-${version}"
	rm -rf "${wrap}" "${outdir}"
	mkdir -p "${wrap}" "${outdir}"
	(
		cd "${wrap}" || exit
		export GOFLAGS="-mod=mod" GOWORK=off
		go mod init "meshbench.local/offline/${name}" >/dev/null 2>&1
		local r p
		for r in "${replaces[@]}"; do
			go mod edit -replace="${r}"
		done
		for r in "${module}@${version}" "${requires[@]}"; do
			go mod edit -require="${r}"
		done
		[ -z "${GO_MAIN_SRC:-}" ] || printf '%s\n' "${GO_MAIN_SRC}" >main.go
		for p in "${pkg_list[@]}"; do
			[ "${p}" = . ] || go mod edit -tool="${p}"
		done
		go mod tidy >&2
		# tidy must not have moved the modules we asked for (a tool's module
		# left unrequired resolves to its latest version)
		local want got
		for r in "${module}@${version}" "${requires[@]}"; do
			want="${r##*@}"
			got=$(go list -m -f '{{.Version}}' "${r%@*}")
			[ "${got}" = "${want}" ] || die "${name}: ${r%@*} resolved to ${got}, not ${want}"
		done
		# shellcheck disable=SC2086
		CGO_ENABLED="${cgo}" ${NICE} go build -trimpath "${GO_NO_DWARF}" ${GO_BUILD_FLAGS:-} -ldflags="${ldflags}" \
			-o "${outdir}/" "${pkg_list[@]}" >&2
	)
	echo "${key}" >"${outdir}/.stamp"
	log "${name}: built $(find "${outdir}" -maxdepth 1 -type f ! -name .stamp -printf '%f ')"
}
