# versus in a container: built in a Rust image, run from a slim one.
# docker build -t versus . (see docs/shards.md, "On Kubernetes")
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --profile release-lto --locked --bin versus

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release-lto/versus /usr/local/bin/versus
ENTRYPOINT ["versus"]
