//go:build !linux

package compat

import "syscall"

func serverProcAttr() *syscall.SysProcAttr { return nil }
