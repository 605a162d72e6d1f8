// Package composecheck holds no code: its test validates the deployment
// files at the repository root (docker-compose.yml, Dockerfile,
// .dockerignore) without a container engine, by loading the compose file
// with the compose-spec reference loader and checking what `docker compose
// up` relies on: services, ports, healthchecks, start order, and the
// onceledger environment.
package composecheck
