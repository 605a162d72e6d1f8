# syntax=docker/dockerfile:1
# onceledger: static binary on distroless, non-root.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so source edits do not re-download them.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0 GOOS=linux
RUN go build -trimpath -ldflags="-s -w" -o /out/onceledger ./cmd/onceledger
# The runtime image has no shell, curl or wget: the compose healthcheck runs
# this tiny stdlib probe instead (exit 0 when GET /healthz answers 2xx).
COPY <<'PROBE' /probe/main.go
package main

import (
	"net/http"
	"os"
	"time"
)

func main() {
	url := "http://127.0.0.1:8080/healthz"
	if len(os.Args) > 1 {
		url = os.Args[1]
	}
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		os.Exit(1)
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		os.Exit(1)
	}
}
PROBE
RUN cd /probe && go mod init probe && go build -trimpath -ldflags="-s -w" -o /out/healthcheck .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/onceledger /onceledger
COPY --from=build /out/healthcheck /healthcheck
USER 65532:65532
EXPOSE 8080
ENV ONCELEDGER_ADDR=:8080
ENTRYPOINT ["/onceledger"]
CMD ["serve"]
