# shellcheck shell=bash
# A libvirt host for kvmprof's tests and benchmarks (sourced; needs root):
#   libvirt_start URI    libvirtd and virtlogd in their daemon mode (-d: no
#                        systemd here) unless they answer at URI already;
#                        0 when libvirtd answers
#   libvirt_domain_type  "kvm" when QEMU's user (libvirt-qemu, group kvm)
#                        can open /dev/kvm, after giving /dev/kvm the mode a
#                        distribution's udev rule gives it (root:kvm 0660)
#                        if it has not; else "qemu" (TCG)
libvirt_start() {
	local i
	virsh -q -c "$1" version >/dev/null 2>&1 && return 0
	pgrep -x virtlogd >/dev/null || virtlogd -d
	pgrep -x libvirtd >/dev/null || libvirtd -d
	for i in $(seq 100); do
		virsh -q -c "$1" version >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

libvirt_qemu_opens_kvm() {
	[ -c /dev/kvm ] && setpriv --reuid=libvirt-qemu --regid=kvm --clear-groups test -w /dev/kvm 2>/dev/null
}

libvirt_domain_type() {
	if [ -c /dev/kvm ] && ! libvirt_qemu_opens_kvm && getent group kvm >/dev/null &&
		chgrp kvm /dev/kvm && chmod 0660 /dev/kvm; then
		echo "libvirt: /dev/kvm set to root:kvm 0660 (as udev's rule has it) so that QEMU's user can open it" >&2
	fi
	if libvirt_qemu_opens_kvm; then
		echo kvm
	else
		echo "libvirt: QEMU cannot open /dev/kvm here: the domains run under TCG" >&2
		echo qemu
	fi
}
