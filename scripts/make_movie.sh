#!/usr/bin/env bash
# Turns a run's sphere previews (OUT/previews/frame_NNNN.png) into a movie:
#   OUT/preview.mp4  H.264, yuv420p (plays everywhere), at the scene's frame rate
#   OUT/preview.gif  a small looping GIF (480 px wide, 15 fps, one optimised palette)
#
# Usage: scripts/make_movie.sh OUT [FPS]
#   FPS defaults to the scene's time.fps (read from OUT/scene.json), else 30.
# Needs ffmpeg (with libx264).
set -euo pipefail

usage() { echo "usage: $0 OUT [FPS]   (OUT is a surge run folder holding previews/)" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
out=${1%/}
previews="$out/previews"

if ! command -v ffmpeg >/dev/null 2>&1; then
    cat >&2 <<'MSG'
error: ffmpeg is not installed; make_movie.sh needs it to encode the previews.
Install it with one of:
  Debian/Ubuntu:  sudo apt-get install ffmpeg
  Fedora:         sudo dnf install ffmpeg      (from RPM Fusion)
  Arch:           sudo pacman -S ffmpeg
  macOS:          brew install ffmpeg
  Windows:        winget install ffmpeg
MSG
    exit 1
fi

shopt -s nullglob
frames=("$previews"/frame_[0-9][0-9][0-9][0-9].png)
if [[ ${#frames[@]} -eq 0 ]]; then
    echo "error: no previews in $previews (expected frame_NNNN.png); run 'surge preview $out' first" >&2
    exit 1
fi
first=$(basename "${frames[0]}" .png)
first=$((10#${first#frame_}))
last=$(basename "${frames[${#frames[@]} - 1]}" .png)
last=$((10#${last#frame_}))
# ffmpeg's numbered input stops at the first missing number: a gap would end the movie there.
if ((last - first + 1 != ${#frames[@]})); then
    for ((f = first; f <= last; f++)); do
        name=$(printf 'frame_%04d.png' "$f")
        if [[ ! -f $previews/$name ]]; then
            echo "error: $previews has no $name (previews run from frame $first to $last): the movie would stop there; render it with 'surge preview $out --frames $f'" >&2
            exit 1
        fi
    done
fi

if [[ $# -ge 2 ]]; then
    fps=$2
else
    fps=$(grep -o '"fps"[[:space:]]*:[[:space:]]*[0-9.eE+-]*' "$out/scene.json" 2>/dev/null \
        | head -n1 | sed 's/.*:[[:space:]]*//' || true)
    fps=${fps:-30}
fi

echo "encoding ${#frames[@]} previews from frame $first at $fps fps"
# -start_number: the first preview; pad: H.264 with yuv420p needs even sides.
ffmpeg -hide_banner -loglevel error -y -framerate "$fps" -start_number "$first" \
    -i "$previews/frame_%04d.png" \
    -vf "pad=ceil(iw/2)*2:ceil(ih/2)*2" \
    -c:v libx264 -preset medium -crf 18 -pix_fmt yuv420p -movflags +faststart \
    "$out/preview.mp4"
ffmpeg -hide_banner -loglevel error -y -framerate "$fps" -start_number "$first" \
    -i "$previews/frame_%04d.png" \
    -vf "fps=15,scale=480:-1:flags=lanczos,split[a][b];[a]palettegen=stats_mode=diff[p];[b][p]paletteuse=dither=bayer:bayer_scale=4" \
    -loop 0 "$out/preview.gif"
echo "wrote $out/preview.mp4 and $out/preview.gif"
