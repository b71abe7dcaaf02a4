python3 -c 'import stats; print(stats.median([1, 2, 3, 4]))'
sed -i 's|    return ordered\[len(ordered) // 2\]|    mid = len(ordered) // 2\n    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2|' stats.py
python3 -c 'import stats; print(stats.median([1, 2, 3, 4]))'
