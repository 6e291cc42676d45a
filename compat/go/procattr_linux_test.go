package compat

import "syscall"

// serverProcAttr makes the kernel kill the server if the test binary dies
// (e.g. on a go test -timeout panic) before TestMain can stop it.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
