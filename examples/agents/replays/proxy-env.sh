grep -n "return" fetch.py
sed -i 's|    return get_bytes(url, timeout)|    return get_bytes(url, timeout).decode()|' fetch.py
