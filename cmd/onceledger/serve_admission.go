package main

import (
	"time"

	"github.com/onceledger/onceledger/adapters/admission"
)

// admissionFlags are serve's admission budget (adapters/admission,
// docs/security.md "What cannot lock the service"): every limit a request
// meets before a handler reads its body. ONCELEDGER_MAX_CONNECTIONS is
// serveCmd's own (it predates them). For the int limits, <0 turns the
// limit off.
type admissionFlags struct {
	ReservedConnections      int           `name:"reserved-connections" env:"ONCELEDGER_RESERVED_CONNECTIONS" default:"256" group:"Server" help:"Connections of max-connections only health checks and webhooks may use: reads, uploads and long polls never hold more than the rest."`
	MaxConnectionsPerAddress int           `name:"max-connections-per-address" env:"ONCELEDGER_MAX_CONNECTIONS_PER_ADDRESS" default:"128" group:"Server" help:"Connections one client address (an IPv6 client: its /64) may hold (loopback clients excepted); past it a new one is closed at once (behind a reverse proxy, every connection has the proxy's address; <0 = no bound)."`
	MaxInFlight              int           `name:"max-in-flight" env:"ONCELEDGER_MAX_IN_FLIGHT" default:"0" group:"Tuning" help:"Requests doing work at once (0 = 4 x ingest-batch, at least 64); beyond it 503 + Retry-After before the body is read (reads are shed from half of it, uploads from three quarters, webhooks at it; health checks never)."`
	MaxInFlightUploads       int           `name:"max-in-flight-uploads" env:"ONCELEDGER_MAX_IN_FLIGHT_UPLOADS" default:"4" group:"Tuning" help:"Uploads (settlement reports, bank statements) being processed at once; more get 503 + Retry-After."`
	MaxInFlightReads         int           `name:"max-in-flight-reads" env:"ONCELEDGER_MAX_IN_FLIGHT_READS" default:"64" group:"Tuning" help:"Reads (/v1, console) being answered at once; more get 503 + Retry-After."`
	MaxLongPolls             int           `name:"max-long-polls" env:"ONCELEDGER_MAX_LONG_POLLS" default:"256" group:"Tuning" help:"Long polls of GET /v1/events?wait= waiting at once; more get 429 + Retry-After."`
	MaxLongPollsPerToken     int           `name:"max-long-polls-per-token" env:"ONCELEDGER_MAX_LONG_POLLS_PER_TOKEN" default:"32" group:"Tuning" help:"Long polls one bearer token may have waiting; more get 429 + Retry-After."`
	AdmissionWait            time.Duration `name:"admission-wait" env:"ONCELEDGER_ADMISSION_WAIT" default:"50ms" group:"Tuning" help:"How long a request may wait for an in-flight slot before it is shed (<0 = shed at once)."`
	HeaderTimeout            time.Duration `name:"header-timeout" env:"ONCELEDGER_HEADER_TIMEOUT" default:"5s" group:"Server" help:"Time a connection has to send a request's headers (a new connection that sends nothing is closed after it)."`
	IdleTimeout              time.Duration `name:"idle-timeout" env:"ONCELEDGER_IDLE_TIMEOUT" default:"60s" group:"Server" help:"A keep-alive connection idle this long is closed (and the longest idle ones first when max-connections is reached)."`
}

// limits is the admission budget of the flags.
func (f admissionFlags) limits() admission.Limits {
	return admission.Limits{
		ReservedConnections:      f.ReservedConnections,
		MaxConnectionsPerAddress: f.MaxConnectionsPerAddress,
		MaxInFlight:              f.MaxInFlight,
		MaxInFlightUploads:       f.MaxInFlightUploads,
		MaxInFlightReads:         f.MaxInFlightReads,
		MaxLongPolls:             f.MaxLongPolls,
		MaxLongPollsPerToken:     f.MaxLongPollsPerToken,
		QueueWait:                f.AdmissionWait,
	}
}
