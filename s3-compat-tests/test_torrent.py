"""GetObjectTorrent (`GET /{key}?torrent`) through boto3's `get_object_torrent`: a BitTorrent
metainfo file whose pieces are the SHA-1s of the object's bytes, as a BitTorrent client checks
them, and a web seed naming the object's URL (Strata runs no tracker)."""

from __future__ import annotations

import hashlib
import os

import pytest
from botocore.exceptions import ClientError

PIECE = 256 * 1024


def bdecode(data: bytes):
    """Decodes one bencoded value (BEP 3): integers, byte strings, lists, dictionaries."""

    def value(i: int):
        c = data[i : i + 1]
        if c == b"i":
            end = data.index(b"e", i)
            return int(data[i + 1 : end]), end + 1
        if c in (b"l", b"d"):
            items, i = [], i + 1
            while data[i : i + 1] != b"e":
                item, i = value(i)
                items.append(item)
            if c == b"l":
                return items, i + 1
            keys = items[0::2]
            assert keys == sorted(keys), "a bencoded dictionary's keys are sorted"
            return dict(zip(keys, items[1::2])), i + 1
        colon = data.index(b":", i)
        length = int(data[i:colon])
        return data[colon + 1 : colon + 1 + length], colon + 1 + length

    decoded, end = value(0)
    assert end == len(data), "nothing follows the top-level dictionary"
    return decoded


def error_of(excinfo) -> tuple[str, int]:
    resp = excinfo.value.response
    return resp["Error"]["Code"], resp["ResponseMetadata"]["HTTPStatusCode"]


def test_a_torrent_lists_the_sha1_of_each_piece_of_the_object(s3, bucket, endpoint):
    data = os.urandom(3 * PIECE + 12_345)
    s3.put_object(Bucket=bucket, Key="datasets/shard-0001.tar", Body=data)

    got = s3.get_object_torrent(Bucket=bucket, Key="datasets/shard-0001.tar")
    assert got["ResponseMetadata"]["HTTPHeaders"]["content-type"] == "application/x-bittorrent"
    torrent = bdecode(got["Body"].read())

    info = torrent[b"info"]
    assert info[b"name"] == b"shard-0001.tar"
    assert info[b"length"] == len(data)
    assert info[b"piece length"] == PIECE
    expected = b"".join(
        hashlib.sha1(data[i : i + PIECE]).digest() for i in range(0, len(data), PIECE)
    )
    assert info[b"pieces"] == expected
    assert torrent[b"url-list"] == f"{endpoint}/{bucket}/datasets/shard-0001.tar".encode()


def test_a_torrent_is_of_the_newest_version_and_of_sse_s3_plaintext(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"old")
    data = os.urandom(1000)
    s3.put_object(Bucket=bucket, Key="k", Body=data, ServerSideEncryption="AES256")
    info = bdecode(s3.get_object_torrent(Bucket=bucket, Key="k")["Body"].read())[b"info"]
    assert info[b"length"] == len(data)
    assert info[b"pieces"] == hashlib.sha1(data).digest()


def test_no_torrent_of_a_missing_key_or_of_an_sse_c_object(s3, bucket):
    with pytest.raises(ClientError) as excinfo:
        s3.get_object_torrent(Bucket=bucket, Key="missing")
    assert error_of(excinfo) == ("NoSuchKey", 404)

    key = bytes(range(32))
    s3.put_object(Bucket=bucket, Key="secret", Body=b"x" * 100,
                  SSECustomerAlgorithm="AES256", SSECustomerKey=key)
    with pytest.raises(ClientError) as excinfo:
        s3.get_object_torrent(Bucket=bucket, Key="secret")
    assert error_of(excinfo) == ("InvalidRequest", 400)
