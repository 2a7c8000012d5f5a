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

# libvirt_guest_xml NAME TYPE VCPUS DIR CMDLINE CONSOLE: a domain of the bundled guest
# (DIR/kernel.elf and DIR/initrd.cpio, booted directly through PVH; 256 MiB; COM1 to the file
# CONSOLE; powering off through ACPI ends it), on standard output.
libvirt_guest_xml() {
	cat <<XML
<domain type='$2'>
  <name>$1</name>
  <memory unit='MiB'>256</memory>
  <vcpu>$3</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>$4/kernel.elf</kernel>
    <initrd>$4/initrd.cpio</initrd>
    <cmdline>$5</cmdline>
  </os>
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_crash>destroy</on_crash>
  <devices>
    <serial type='file'><source path='$6'/><target port='0'/></serial>
    <video><model type='none'/></video>
    <memballoon model='none'/>
  </devices>
</domain>
XML
}
