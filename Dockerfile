# Lore's server in a container: `lore serve` on 0.0.0.0:7077, its store in the /data volume, or
# in PostgreSQL with DATABASE_URL (the build has the PostgreSQL store; deploy/compose.postgres.yaml
# runs three).
#
#   docker build -t lore .                     # podman: podman build --format docker -t lore .
#   docker run --rm -v lore-data:/data lore tokens create --role admin --scope '*'   # prints a token once
#   docker run -d -p 127.0.0.1:7077:7077 -v lore-data:/data lore
#
# The server refuses a non-loopback address until a token (or a JWT key) exists, so create one
# first; compose.yaml does the same with compose. See docs/deploy.md.
#
# The build needs the Rust toolchain (about 1.5 GB), the image only the binary and Debian's slim
# base. The base images are build arguments, so a mirror can stand in for them. `--target
# prebuilt` takes the binary from the build context (PREBUILT, default target/release/lore)
# instead of compiling it in the image (where no Rust image can be pulled, or to reuse a build;
# strip it first, as the build stage does). The default image is the last stage. No stage is
# chosen through a build argument: podman (buildah) reads `FROM ${ARG}` as an image's short name.
ARG RUST_IMAGE=rust:1.89-slim-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY . .
# One target folder inside the build stage, whatever CARGO_TARGET_DIR the host had.
RUN cargo build --release --locked -p lore-cli --features postgres --target-dir /build \
 && strip /build/release/lore \
 && mkdir -p /out && cp /build/release/lore /out/lore

FROM ${RUNTIME_IMAGE} AS runtime
# ca-certificates: the model and embedding providers are reached over HTTPS.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /data --create-home lore
USER lore
WORKDIR /data
ENV LORE_HOME=/data/.lore \
    LORE_SKILLS_DIR=/data/skills
VOLUME ["/data"]
EXPOSE 7077
# Healthy while the server answers HTTP (200, or 401 once tokens exist); the image has no curl,
# so bash's /dev/tcp sends the request.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/7077 && printf 'GET /v1/openapi.json HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && head -c 12 <&3 | grep -Eq '^HTTP/1.1 (200|401)'"]
ENTRYPOINT ["lore"]
CMD ["serve", "--addr", "0.0.0.0:7077"]

# The binary from the build context.
FROM runtime AS prebuilt
ARG PREBUILT=target/release/lore
COPY ${PREBUILT} /usr/local/bin/lore

# The default: the binary compiled in the build stage.
FROM runtime AS image
COPY --from=build /out/lore /usr/local/bin/lore
