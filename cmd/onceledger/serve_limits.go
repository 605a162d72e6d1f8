package main

import (
	"fmt"
	"time"
)

// hostileFlags are serve's limits against clients that cost more than
// their share (issue 33; docs/security.md).
type hostileFlags struct {
	UploadIdleTimeout time.Duration `name:"upload-idle-timeout" env:"ONCELEDGER_UPLOAD_IDLE_TIMEOUT" default:"30s" group:"Server" help:"An upload (settlement report) that sends no byte of its body this long is cut off with 408; nothing is imported."`
}

func (h hostileFlags) validate() error {
	if h.UploadIdleTimeout <= 0 {
		return fmt.Errorf("ONCELEDGER_UPLOAD_IDLE_TIMEOUT must be positive, got %v", h.UploadIdleTimeout)
	}
	return nil
}
