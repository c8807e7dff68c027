# Sundial's container image: a static binary (pure-Go SQLite, no cgo) on
# distroless/static, run as an unprivileged user.
#
#   docker build -t sundial .
#   docker run -p 8080:8080 -v sundial:/var/lib/sundial \
#     -e SUNDIAL_AUTH_BOOTSTRAP_TOKEN="$(openssl rand -hex 32)" sundial
#
# The node listens on all addresses of the container, so the API requires
# tokens: give it SUNDIAL_AUTH_BOOTSTRAP_TOKEN to create the first ones
# (docs/security.md). For a cluster, set SUNDIAL_DB to a postgres:// or
# mysql:// URL and SUNDIAL_SECRETS_KEY (docs/deploy.md).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/sundial ./cmd/sundial
# The state directory, owned by the image's user (65532, "nonroot").
RUN mkdir -p /out/state && chown 65532:65532 /out/state

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sundial /usr/local/bin/sundial
COPY --from=build --chown=65532:65532 /out/state /var/lib/sundial
USER 65532:65532
WORKDIR /var/lib/sundial
VOLUME /var/lib/sundial
ENV SUNDIAL_LISTEN=0.0.0.0:8080 \
    SUNDIAL_DB=sqlite:/var/lib/sundial/sundial.db \
    SUNDIAL_LOG_FORMAT=json
EXPOSE 8080
# The image has no shell and no curl: the binary asks its own /healthz.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/sundial", "health", "--url", "http://127.0.0.1:8080"]
ENTRYPOINT ["/usr/local/bin/sundial"]
CMD ["serve"]
