#!/usr/bin/env bash
# Start an MLflow tracking server with a sqlite store and a local artifact folder.
# Usage: infra/mlflow-server.sh [DATA_DIR] [HOST] [PORT]   (defaults: ./mlflow-data 127.0.0.1 5000)
# Point runs at it with MLFLOW_TRACKING_URI=http://HOST:PORT.
set -euo pipefail
data_dir=$(realpath -m "${1:-./mlflow-data}")
host=${2:-127.0.0.1}
port=${3:-5000}
mkdir -p "$data_dir/artifacts"
exec mlflow server \
    --backend-store-uri "sqlite:///$data_dir/mlflow.db" \
    --artifacts-destination "$data_dir/artifacts" \
    --host "$host" --port "$port"
