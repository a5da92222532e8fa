"""Researcher API for a project's members and invitations.

Security: researchers of the project only (``IsProjectResearcher``: 404 to anyone else, 401/403
without login). Bad input is a 400 naming the field; refusals (the last researcher, a member
already there) come from projects/members.py through ``core.errors``.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import Refusal
from projects import members
from projects.member_views import invitation_url
from projects.models import Invitation, Membership
from projects.permissions import IsProjectResearcher


class MemberSerializer(serializers.Serializer):
    username = serializers.CharField(source="user.username", read_only=True)
    role = serializers.CharField(read_only=True)
    pseudonym = serializers.CharField(read_only=True)
    qualification = serializers.CharField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)
    removed_at = serializers.DateTimeField(read_only=True, allow_null=True)


class MemberAddSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class InvitationSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()

    class Meta:
        model = Invitation
        fields = ["id", "role", "note", "created_at", "expires_at", "url"]

    def get_url(self, invitation: Invitation) -> str:
        return invitation_url(self.context["request"], invitation)


class InvitationCreateSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Membership.Role.choices)
    expires_in_days = serializers.IntegerField(
        required=False, min_value=1, max_value=members.MAX_INVITATION_DAYS
    )
    note = serializers.CharField(required=False, allow_blank=True, max_length=200)


class MemberListView(APIView):
    """GET: the current members (``?removed=1``: the removed ones). POST ``{username, role}``:
    add an existing account (a removed member comes back with their pseudonym)."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(responses=MemberSerializer(many=True))
    def get(self, request, slug):
        removed = request.query_params.get("removed") in ("1", "true")
        rows = members.project_members(project=self.project, removed=removed)
        return Response(MemberSerializer(rows, many=True).data)

    @extend_schema(request=MemberAddSerializer, responses={201: MemberSerializer})
    def post(self, request, slug):
        body = MemberAddSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        membership = members.member_add(
            project=self.project, **body.validated_data, by=request.user
        )
        return Response(MemberSerializer(membership).data, status=status.HTTP_201_CREATED)


class MemberView(APIView):
    """PATCH ``{role}``: change a member's role. DELETE: remove them (their work is kept)."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(request=MemberRoleSerializer, responses=MemberSerializer)
    def patch(self, request, slug, username):
        membership = members.member_for_username(project=self.project, username=username)
        body = MemberRoleSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        membership = members.member_role_set(
            membership=membership, **body.validated_data, by=request.user
        )
        return Response(MemberSerializer(membership).data)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request, slug, username):
        membership = members.member_for_username(project=self.project, username=username)
        members.member_remove(membership=membership, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationListView(APIView):
    """GET: open invitations with their links. POST ``{role, expires_in_days?, note?}``: a new
    single-use link (``url``) to send to one person."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(responses=InvitationSerializer(many=True))
    def get(self, request, slug):
        rows = members.open_invitations(project=self.project)
        return Response(InvitationSerializer(rows, many=True, context={"request": request}).data)

    @extend_schema(request=InvitationCreateSerializer, responses={201: InvitationSerializer})
    def post(self, request, slug):
        body = InvitationCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        invitation = members.invitation_create(
            project=self.project, created_by=request.user, **body.validated_data
        )
        return Response(
            InvitationSerializer(invitation, context={"request": request}).data,
            status=status.HTTP_201_CREATED,
        )


class InvitationView(APIView):
    """DELETE: withdraw an invitation that has not been used."""

    permission_classes = [IsProjectResearcher]

    @extend_schema(request=None, responses={204: None})
    def delete(self, request, slug, invitation_id):
        invitation = Invitation.objects.filter(project=self.project, pk=invitation_id).first()
        if invitation is None:
            raise Refusal("No such invitation.", code="not_found")
        members.invitation_revoke(invitation=invitation, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
