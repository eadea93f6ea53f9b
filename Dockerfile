# The `lore` binary with the PostgreSQL store, for compose.yaml.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p lore-cli --features postgres

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/lore /usr/local/bin/lore
EXPOSE 7077
CMD ["lore", "serve", "--addr", "0.0.0.0:7077"]
